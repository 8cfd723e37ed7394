#include "runtime/device.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/core/status_macros.h"
#include "runtime/cpu_device.h"
#include "runtime/cuda_discovery.h"
#include "spdlog/spdlog.h"

namespace tensord {

absl::StatusOr<StagingBuffer> Device::AllocateStaging(size_t bytes) {
  (void)bytes;
  return absl::UnimplementedError(
      absl::StrCat(name(), " reads synchronously: no staging buffers"));
}

void Device::CopyToHostAsync(void* dst, const void* src, size_t bytes,
                             StreamHandle stream,
                             std::function<void(absl::Status)> on_done) {
  on_done(CopyToHost(dst, src, bytes, stream));
}

absl::Status Device::CopyFromHostAsync(
    void* dst, const void* src, size_t bytes, StreamHandle stream,
    std::function<void(absl::Status)> on_done) {
  TD_RETURN_IF_ERROR(CopyFromHost(dst, src, bytes, stream));
  on_done(absl::OkStatus());
  return absl::OkStatus();
}

std::unique_ptr<DeviceRegistry> DeviceRegistry::Create(
    const std::vector<std::string>& allowed) {
  auto permitted = [&](const std::string& name) {
    return allowed.empty() ||
           std::find(allowed.begin(), allowed.end(), name) != allowed.end();
  };
  std::vector<std::unique_ptr<Device>> devices;
  devices.push_back(MakeCpuDevice());  // always present: the embedded default
  std::string why_none;
  for (auto& gpu : DiscoverCudaDevices(&why_none)) {
    if (permitted(gpu->name())) {
      spdlog::info("device {}: {}", gpu->name(),
                   gpu->description().description);
      devices.push_back(std::move(gpu));
    }
  }
  if (devices.size() == 1) {
    spdlog::info("no CUDA device: {}; serving cpu only", why_none);
  }
  return std::make_unique<DeviceRegistry>(std::move(devices));
}

DeviceRegistry::DeviceRegistry(std::vector<std::unique_ptr<Device>> devices)
    : devices_(std::move(devices)), default_(devices_.front().get()) {}

Device* DeviceRegistry::Find(absl::string_view name) const {
  if (name == "cuda" && devices_.size() > 1) return devices_[1].get();
  for (const auto& d : devices_) {
    if (d->name() == name) return d.get();
  }
  return nullptr;
}

absl::Status DeviceRegistry::SetDefaultDevice(absl::string_view name) {
  Device* device = Find(name);
  if (device == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "no device '", name, "' to make the default; serving ", Names()));
  }
  default_ = device;
  return absl::OkStatus();
}

std::string DeviceRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& d : devices_) names.push_back(d->name());
  return absl::StrJoin(names, ", ");
}

}  // namespace tensord

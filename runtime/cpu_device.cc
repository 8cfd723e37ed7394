#include "runtime/cpu_device.h"

#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/host_copy.h"
#include "runtime/memory/caching_allocator.h"

namespace tensord {
namespace {

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "model name")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "cpu";
}

class CpuDevice : public Device {
 public:
  explicit CpuDevice(size_t capacity)
      : allocator_(MakeHostCachingAllocator("cpu", capacity)) {
    desc_.name = "cpu";
    desc_.kind = DeviceKind::kCpu;
    desc_.description = absl::StrCat(
        CpuModel(), " (", std::thread::hardware_concurrency(), " threads)");
    desc_.total_memory =
        capacity != 0 ? capacity
                      : static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                            static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
  }
  const DeviceDescription& description() const override { return desc_; }
  CachingAllocator* allocator() override { return allocator_.get(); }
  // Host to host: large copies (uploads) are split over the intra-op pool.
  absl::Status CopyFromHost(void* dst, const void* src, size_t bytes,
                            StreamHandle) override {
    CopyHostBytes(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes,
                          StreamHandle) override {
    CopyHostBytes(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status Synchronize(StreamHandle) override { return absl::OkStatus(); }

 private:
  DeviceDescription desc_;
  std::unique_ptr<CachingAllocator> allocator_;
};

}  // namespace

std::unique_ptr<Device> MakeCpuDevice(size_t capacity) {
  return std::make_unique<CpuDevice>(capacity);
}

}  // namespace tensord

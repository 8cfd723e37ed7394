#include "server/nvml.h"

#include <dlfcn.h>

#include <type_traits>

namespace tensord {
namespace {

// The few NVML declarations used, from nvml.h (the driver's stable C ABI;
// the _v2 entry points have existed since CUDA 5), so the build needs no
// NVIDIA headers.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlTemperatureGpu = 0;
struct NvmlUtilization {
  unsigned gpu;
  unsigned memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  nvmlReturn_t (*device_count)(unsigned*);
  nvmlReturn_t (*device_by_index)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*utilization)(nvmlDevice_t, NvmlUtilization*);
  nvmlReturn_t (*memory)(nvmlDevice_t, NvmlMemory*);
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*);
};

std::unique_ptr<Nvml> Nvml::Load(std::string* why, const char* library) {
  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    if (why != nullptr) *why = std::string(library) + " not found";
    return nullptr;
  }
  return Bind(lib, why);
}

std::unique_ptr<Nvml> Nvml::Bind(void* lib, std::string* why) {
  auto fail = [why](std::string message) {
    if (why != nullptr) *why = std::move(message);
    return nullptr;
  };
  auto api = std::make_unique<Api>();
  bool found = true;
  auto bind = [&](auto** fn, const char* name) {
    using Fn = std::remove_reference_t<decltype(*fn)>;
    *fn = reinterpret_cast<Fn>(dlsym(lib, name));
    found = found && *fn != nullptr;
  };
  bind(&api->init, "nvmlInit_v2");
  bind(&api->shutdown, "nvmlShutdown");
  bind(&api->device_count, "nvmlDeviceGetCount_v2");
  bind(&api->device_by_index, "nvmlDeviceGetHandleByIndex_v2");
  bind(&api->uuid, "nvmlDeviceGetUUID");
  bind(&api->utilization, "nvmlDeviceGetUtilizationRates");
  bind(&api->memory, "nvmlDeviceGetMemoryInfo");
  bind(&api->temperature, "nvmlDeviceGetTemperature");
  if (!found) return fail("the NVML library lacks an entry point");
  if (nvmlReturn_t r = api->init(); r != kNvmlSuccess) {
    return fail("nvmlInit failed (NVML error " + std::to_string(r) + ")");
  }
  return std::unique_ptr<Nvml>(new Nvml(std::move(api)));
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}

Nvml::~Nvml() { api_->shutdown(); }

std::vector<GpuReading> Nvml::Read() const {
  std::vector<GpuReading> out;
  unsigned count = 0;
  if (api_->device_count(&count) != kNvmlSuccess) return out;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (api_->device_by_index(i, &device) != kNvmlSuccess) continue;
    GpuReading& gpu = out.emplace_back();
    gpu.index = i;
    char uuid[96] = {};
    if (api_->uuid(device, uuid, sizeof(uuid) - 1) == kNvmlSuccess) {
      gpu.uuid = uuid;
    }
    NvmlUtilization utilization{};
    if (api_->utilization(device, &utilization) == kNvmlSuccess) {
      gpu.utilization = utilization.gpu / 100.0;
    }
    NvmlMemory memory{};
    if (api_->memory(device, &memory) == kNvmlSuccess) {
      gpu.memory_used_bytes = memory.used;
      gpu.memory_total_bytes = memory.total;
    }
    unsigned celsius = 0;
    if (api_->temperature(device, kNvmlTemperatureGpu, &celsius) ==
        kNvmlSuccess) {
      gpu.temperature_celsius = celsius;
    }
  }
  return out;
}

}  // namespace tensord

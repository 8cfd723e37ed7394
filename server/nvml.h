// GPU state from NVML for the metrics (server/metrics_collector.h): each
// GPU's utilisation, memory and temperature, as nvidia-smi shows them.
//
// NVML is opened at run time (dlopen of libnvidia-ml.so.1, the driver's
// library), so the daemon builds and runs with no NVIDIA software at all;
// without the library, or where nvmlInit fails (no driver, no GPU), Load
// returns null and no GPU metrics are exported. Thread-safe (NVML is).
#ifndef TENSORD_SERVER_NVML_H_
#define TENSORD_SERVER_NVML_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tensord {

// One GPU as NVML numbers them (not CUDA's order, which
// CUDA_VISIBLE_DEVICES changes: the UUID says which is which). A reading
// NVML refused (not supported on this GPU) is empty.
struct GpuReading {
  unsigned index = 0;
  std::string uuid;
  std::optional<double> utilization;  // of the last sample period, 0 to 1
  std::optional<uint64_t> memory_used_bytes;
  std::optional<uint64_t> memory_total_bytes;
  std::optional<double> temperature_celsius;  // the GPU die
};

class Nvml {
 public:
  // NVML if the driver's library (`library`: tests name a fake) loads and
  // initialises; null otherwise (`why`, if given, says what failed).
  static std::unique_ptr<Nvml> Load(std::string* why = nullptr,
                                    const char* library = "libnvidia-ml.so.1");
  ~Nvml();  // nvmlShutdown; the library stays loaded (cheap, and safe)
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // Every GPU's current state (a few microseconds per GPU).
  std::vector<GpuReading> Read() const;

 private:
  struct Api;
  explicit Nvml(std::unique_ptr<Api> api);
  static std::unique_ptr<Nvml> Bind(void* lib, std::string* why);
  std::unique_ptr<Api> api_;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_NVML_H_

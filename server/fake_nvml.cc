// A fake libnvidia-ml.so.1 for server/nvml_test.cc: two GPUs with fixed
// readings; the second does not report its temperature (as GPUs whose
// sensors NVML cannot read answer NOT_SUPPORTED).
#include <cstring>

extern "C" {

struct nvmlDevice_st {
  unsigned index;
};
static nvmlDevice_st devices[2] = {{0}, {1}};
static int initialised = 0;

struct Utilization {
  unsigned gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};

int nvmlInit_v2() {
  initialised = 1;
  return 0;
}
int nvmlShutdown() {
  initialised = 0;
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* count) {
  if (!initialised) return 1;  // NVML_ERROR_UNINITIALIZED
  *count = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_st** device) {
  if (i >= 2) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &devices[i];
  return 0;
}
int nvmlDeviceGetUUID(nvmlDevice_st* device, char* uuid, unsigned length) {
  const char* ids[2] = {"GPU-fake-0", "GPU-fake-1"};
  std::strncpy(uuid, ids[device->index], length);
  return 0;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_st* device, Utilization* u) {
  u->gpu = device->index == 0 ? 75 : 0;
  u->memory = 10;
  return 0;
}
int nvmlDeviceGetMemoryInfo(nvmlDevice_st* device, Memory* m) {
  m->total = 80ull << 30;
  m->used = device->index == 0 ? 3ull << 30 : 0;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetTemperature(nvmlDevice_st* device, int sensor,
                             unsigned* celsius) {
  if (device->index == 1 || sensor != 0) return 3;  // NOT_SUPPORTED
  *celsius = 61;
  return 0;
}

}  // extern "C"

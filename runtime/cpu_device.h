// The CPU device: host memory through the caching allocator; kernels run
// synchronously on the calling executor thread (streams are nullptr).
#ifndef TENSORD_RUNTIME_CPU_DEVICE_H_
#define TENSORD_RUNTIME_CPU_DEVICE_H_

#include <memory>

#include "runtime/device.h"

namespace tensord {

std::unique_ptr<Device> MakeCpuDevice();

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CPU_DEVICE_H_

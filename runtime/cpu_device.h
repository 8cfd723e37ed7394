// The CPU device: host memory through the caching allocator; kernels run
// synchronously on the calling executor thread (streams are nullptr).
#ifndef TENSORD_RUNTIME_CPU_DEVICE_H_
#define TENSORD_RUNTIME_CPU_DEVICE_H_

#include <cstddef>
#include <memory>

#include "runtime/device.h"

namespace tensord {

// `capacity`: the most bytes its allocator maps (Note [Host capacity]); 0, the
// machine's physical memory.
std::unique_ptr<Device> MakeCpuDevice(size_t capacity = 0);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CPU_DEVICE_H_

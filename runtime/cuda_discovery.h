// CUDA device discovery, linked in two flavours: cuda_device.cc when the
// toolkit was found at build time, cuda_discovery_none.cc otherwise.
#ifndef TENSORD_RUNTIME_CUDA_DISCOVERY_H_
#define TENSORD_RUNTIME_CUDA_DISCOVERY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/device.h"

namespace tensord {

// The usable GPUs as devices "cuda:0".."cuda:N-1". When there are none, an
// empty list and `*why_none` says why (not built with CUDA, no driver, no
// device, ...).
std::vector<std::unique_ptr<Device>> DiscoverCudaDevices(std::string* why_none);

// Whether this binary was built with CUDA support.
bool CudaBuilt();

// Note [Sticky CUDA errors] (kernels/cuda/cuda_check.h): CUDA's sticky
// errors (illegal address, launch failure, ...) become StickyDeviceError
// statuses, so the first one runs this handler on the thread that saw it:
// the same handler as runtime/core's SetStickyErrorHandler, which this
// installs (the daemon's wakes its main thread, which tells every session
// and exits 75 for the supervisor: Note [Sticky device errors] in
// runtime/core/device_error.h). Without a handler, sticky errors only fail
// ops.
using FatalDeviceErrorHandler = void (*)(const absl::Status& status);
void SetFatalDeviceErrorHandler(FatalDeviceErrorHandler handler);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CUDA_DISCOVERY_H_

// CUDA device discovery, linked in two flavours: cuda_device.cc when the
// toolkit was found at build time, cuda_discovery_none.cc otherwise.
#ifndef TENSORD_RUNTIME_CUDA_DISCOVERY_H_
#define TENSORD_RUNTIME_CUDA_DISCOVERY_H_

#include <memory>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace tensord {

// The usable GPUs as devices "cuda:0".."cuda:N-1". When there are none, an
// empty list and `*why_none` says why (not built with CUDA, no driver, no
// device, ...).
std::vector<std::unique_ptr<Device>> DiscoverCudaDevices(std::string* why_none);

// Whether this binary was built with CUDA support.
bool CudaBuilt();

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CUDA_DISCOVERY_H_

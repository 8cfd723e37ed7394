// Backends over the CUDA runtime: device memory (cudaMalloc/cudaFree, events
// from cudaEventRecord, zeroing with cudaMemsetAsync) and pinned host memory
// for staging copies (cudaHostAlloc/cudaFreeHost). Built without the CUDA
// toolkit, the factories return UNIMPLEMENTED and nothing else changes.
//
// Ownership: a backend owns nothing it hands out (see backend.h).
// Thread safety: every call first selects the backend's device
// (cudaSetDevice), so it is safe from any thread; the CUDA runtime itself is
// thread-safe.
#ifndef TENSORD_RUNTIME_MEMORY_CUDA_BACKEND_H_
#define TENSORD_RUNTIME_MEMORY_CUDA_BACKEND_H_

#include <memory>

#include "absl/status/statusor.h"
#include "runtime/memory/backend.h"
#include "runtime/memory/caching_allocator.h"

namespace tensord {

// Whether this binary was built with the CUDA runtime.
bool CudaBackendsBuilt();

// Device memory of CUDA device `device` ("cuda:<device>").
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device);

// Page-locked host memory usable by async copies on `device`'s streams
// ("cuda_host").
absl::StatusOr<std::unique_ptr<Backend>> MakePinnedHostBackend(int device);

// The allocators the runtime's CUDA device and its staging buffers use.
absl::StatusOr<std::unique_ptr<CachingAllocator>> MakeCudaCachingAllocator(
    int device);
absl::StatusOr<std::unique_ptr<CachingAllocator>>
MakePinnedHostCachingAllocator(int device);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_MEMORY_CUDA_BACKEND_H_

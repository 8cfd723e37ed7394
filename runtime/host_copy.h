// Host-to-host byte copies for transfers (uploads into tensor storage,
// downloads into a client's shared buffer): one memcpy below
// kParallelCopyBytes, above it split into contiguous ranges over the
// intra-op pool (kernels/cpu/parallel.h), so that every core of the pool
// copies together; one core alone does not saturate memory bandwidth.
// The split takes the CPU compute gate like any wide kernel (Note [CPU
// compute gate]), so concurrent sessions' large copies alternate.
//
// Thread-safe; `dst` and `src` must not overlap.
#ifndef TENSORD_RUNTIME_HOST_COPY_H_
#define TENSORD_RUNTIME_HOST_COPY_H_

#include <cstddef>

namespace tensord {

// From this size a copy is split (smaller ones do not pay the hand-off).
inline constexpr size_t kParallelCopyBytes = size_t{4} << 20;

void CopyHostBytes(void* dst, const void* src, size_t bytes);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_HOST_COPY_H_

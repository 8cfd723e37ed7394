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
#include <functional>

namespace tensord {

// From this size a copy is split (smaller ones do not pay the hand-off).
inline constexpr size_t kParallelCopyBytes = size_t{4} << 20;

void CopyHostBytes(void* dst, const void* src, size_t bytes);

// The split CopyHostBytes makes, for copies it cannot do itself (the
// daemon's cross-memory attach, server/cma.h): `copy(from, to)` for
// contiguous byte ranges covering [0, bytes), one range on the caller below
// kParallelCopyBytes, else one per intra-op thread.
void ForEachCopyRange(size_t bytes,
                      const std::function<void(size_t, size_t)>& copy);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_HOST_COPY_H_

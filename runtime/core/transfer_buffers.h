// Keeping chunk-sized heap buffers mapped across transfers (both ends).
//
// Note [Transfer buffers]: a stream transfer allocates and frees buffers of
// about a chunk (1 MiB) per chunk on both ends: gRPC's read slices, the
// strings a Put or Data chunk is parsed into or copied into. With glibc's
// default, dynamic thresholds such buffers are mmap'ed and unmapped, or
// trimmed off the heap's top once a transfer's worth of them is freed, so
// every chunk faults in and zeroes fresh pages, which costs more than
// copying its bytes: in `perf` of 256 MiB transfers, one page fault per
// 4 KiB received on the client, and its CPU per round trip nearly halved
// without them. Raising the mmap threshold above any chunk buffer and the
// trim threshold above what a transfer has in flight keeps them in the heap.
// Tensor storage is mmap'ed by the caching allocator, not malloc'ed.
#ifndef TENSORD_RUNTIME_CORE_TRANSFER_BUFFERS_H_
#define TENSORD_RUNTIME_CORE_TRANSFER_BUFFERS_H_

#include <cstddef>

namespace tensord {

// Sets glibc's M_MMAP_THRESHOLD and M_TRIM_THRESHOLD (process-wide; this
// also turns off their dynamic adjustment). Skipped, returning false, when
// the environment already sets malloc tunables (GLIBC_TUNABLES,
// MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_: the user's choice wins)
// and where malloc is not glibc's. Thread-safe.
bool KeepTransferBuffersMapped(size_t mmap_threshold, size_t trim_threshold);

// Returns the heap's free pages to the kernel (glibc's malloc_trim(0); a
// no-op elsewhere). With the thresholds above, memory freed after a burst
// (a session's queued batches, its replies) otherwise stays resident until
// reused; the daemon calls this when a session ends. Takes each malloc
// arena's lock in turn: not for a hot path. Thread-safe.
void ReturnFreeHeapMemory();

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_TRANSFER_BUFFERS_H_

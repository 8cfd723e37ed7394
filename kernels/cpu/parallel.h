// The shared intra-op thread pool for CPU kernels.
//
// ParallelFor splits [0, n) into contiguous ranges when n * cost_per_item is
// large enough to pay for the hand-off; otherwise it runs inline on the
// calling (session executor) thread. Thread-safe; the pool is process-wide and
// sized to the hardware concurrency (override with TENSORD_NUM_THREADS).
// Nested calls (a ParallelFor inside another's body) run inline: the outer
// call already occupies every thread.
#ifndef TENSORD_KERNELS_CPU_PARALLEL_H_
#define TENSORD_KERNELS_CPU_PARALLEL_H_

#include <cstdint>

#include "absl/functional/function_ref.h"

namespace tensord {
namespace cpu {

// Below this many elements of work a kernel runs single-threaded.
inline constexpr int64_t kParallelGrain = 1 << 16;

// Calls fn(begin, end) over disjoint ranges covering [0, n); returns when all
// are done. `work_per_item` scales the grain (e.g. inner length). `fn` is
// borrowed, not copied: a kernel's call costs no allocation.
void ParallelFor(int64_t n, int64_t work_per_item,
                 absl::FunctionRef<void(int64_t, int64_t)> fn);

// As ParallelFor, and each range also gets a slot in [0, NumThreads()) that
// no other range of this call has: an index into per-thread scratch.
void ParallelForSlots(int64_t n, int64_t work_per_item,
                      absl::FunctionRef<void(int, int64_t, int64_t)> fn);

// Note [Claimed items]: calls fn(i) once for each i in [0, n), items
// claimed one at a time from a shared counter by the calling thread and up to
// NumThreads() - 1 workers. The caller never waits for a worker that has not
// started yet: when the pool's threads are late (the other cores busy with
// another process, as the Python client is beside the daemon on a 2-core
// VM), the caller runs the remaining items itself instead of idling until a
// statically assigned range's thread is scheduled. Which thread runs an item
// varies between calls; what an item computes must not depend on it. For
// coarse items (a GEMM's blocks of C: Note [GEMM threads] in gemm.h): each
// call allocates its shared state. Inside a ParallelFor body it runs inline.
void ParallelForClaimed(int64_t n, absl::FunctionRef<void(int64_t)> fn);

// True inside a ParallelFor body (where a nested ParallelFor runs inline).
bool InParallelRegion();

int NumThreads();

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_PARALLEL_H_

// Pairwise p-norm distances: torch.cdist (ATen's _cdist_forward and
// _cdist_backward) and torch.nn.functional.pdist (_pdist_forward and
// _pdist_backward). The norms and their gradients are Note [Distance norms]
// in runtime/core/distance_math.h, shared with kernels/cuda/distance.h.
//
// Contract: every view is C-contiguous float32 or float64 (the caller
// broadcast the batch dims and made copies where needed); p >= 0 (checked
// by the caller). Sums run in double and round once. Deterministic: each
// output element is written by one thread, in a fixed order.
#ifndef TENSORD_KERNELS_CPU_DISTANCE_H_
#define TENSORD_KERNELS_CPU_DISTANCE_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// out [B, P, R] = the distance of x1's row i to x2's row j for x1 [B, P, M]
// and x2 [B, R, M].
absl::Status Cdist(const StridedView& x1, const StridedView& x2, double p,
                   const StridedView& out);

// out [B, P, M] = the gradient of x1 for grad and dist [B, P, R] (x2's
// gradient is this with the operands swapped and grad, dist transposed).
absl::Status CdistBackward(const StridedView& grad, const StridedView& x1,
                           const StridedView& x2, const StridedView& dist,
                           double p, const StridedView& out);

// out [N (N - 1) / 2] = the distances of x [N, M]'s rows i < j, in row-major
// order of the pairs.
absl::Status Pdist(const StridedView& x, double p, const StridedView& out);

// out [N, M] = the gradient of x for grad and dist [N (N - 1) / 2].
absl::Status PdistBackward(const StridedView& grad, const StridedView& x,
                           const StridedView& dist, double p,
                           const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_DISTANCE_H_

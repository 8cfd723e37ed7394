// softmax and log_softmax, forward and backward, on contiguous float32 /
// float64 tensors seen as [outer, dim, inner] (softmax along dim), rows split
// over the intra-op pool.
//
// Note [CPU softmax]: the attention-shaped case (many short rows along the
// last dim: [8, 4, 64, 64], 2,048 rows of 64) is what a transformer's
// composed attention runs. float32 rows along the last dim take AVX2 + FMA
// code (vec_math.h's exp polynomial, 8 lanes per instruction) where the CPU
// has it, picked at run time: the kernels are built without -mavx2, so the
// compiler's own vectorisation of the portable loops stops at SSE2's 4 lanes
// and, around the exp's clamps and selects, did not vectorise the exp pass
// at all (0.87 ms for [8, 4, 64, 64] on the 2-vCPU VM against PyTorch's
// 0.13 ms; 0.03 ms with this code). oneDNN's softmax primitive (Debian's
// 2.6) was measured too: 0.05 ms with the rows split over the pool, one
// cached primitive per block shape, i.e. slower at these short rows than a
// kernel of ~40 lines, so it is not used. Other dims (inner > 1) and float64
// run portable loops over 8 inner positions at a time.
//
// Results are PyTorch's: rows sum to 1; -inf entries give 0 (log: -inf); a
// row that is all -inf gives NaN; a NaN anywhere in a row makes it all NaN.
// The backward is one pass per row over (grad, output) in place of the four
// rows of its composite formula (mul, sum, mul, sub).
#ifndef TENSORD_KERNELS_CPU_SOFTMAX_H_
#define TENSORD_KERNELS_CPU_SOFTMAX_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// y = softmax(x) along dim (log: log_softmax).
absl::Status Softmax(const StridedView& in, int64_t outer, int64_t dim,
                     int64_t inner, bool log, const StridedView& out);

// dx from the forward's output y and its gradient dy (same shape and dtype):
// softmax: dx = y * (dy - sum(dy * y)); log: dx = dy - exp(y) * sum(dy), the
// sums along dim (PyTorch's _softmax_backward_data and
// _log_softmax_backward_data).
absl::Status SoftmaxBackward(const StridedView& dy, const StridedView& y,
                             int64_t outer, int64_t dim, int64_t inner,
                             bool log, const StridedView& dx);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_SOFTMAX_H_

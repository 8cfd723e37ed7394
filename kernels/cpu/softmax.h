// softmax and log_softmax, forward and backward, on contiguous float32 /
// float64 tensors seen as [outer, dim, inner] (softmax along dim), rows split
// over the intra-op pool.
//
// Note [CPU softmax]: the kernels are built without -mavx2 (the daemon runs
// on any x86-64), so the compiler vectorised the portable loops at SSE2's 4
// lanes at best. float32 takes AVX2 + FMA code where the CPU has it, picked
// at run time (vec_math_avx2.h: vec_math.h's exp, 8 lanes): rows along the
// last dim one at a time, other dims 8 columns side by side; float64 and
// column remainders run the portable loops. On [8, 4, 64, 64] along the
// last dim (attention's scores: 2,048 rows of 64), 2-vCPU AVX2 VM, load ~5,
// best of 3 rounds, 1 / 2 threads: forward 0.34 / 0.35 ms before, 0.090 /
// 0.096 ms now, PyTorch 2.15 0.101 / 0.097 ms; log_softmax 0.098 / 0.104
// (behind PyTorch's 0.081 / 0.066); the fused backward 0.027 /
// 0.034 ms (PyTorch 0.028 / 0.017), log 0.055 / 0.062 (0.057 / 0.054); along
// dim 1 (4 x 4,096 columns) 1.65 -> 0.14 ms (PyTorch 0.11 / 0.08).
// oneDNN's softmax primitive (Debian's 2.6, one cached primitive per pool
// block, one OpenMP thread) measured 0.12-0.18 ms there: slower at rows this
// short, so it is not used.
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

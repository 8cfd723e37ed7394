// GELU forward and backward, exact (erf) and tanh-approximated, on
// contiguous float32/float64 data, split over the intra-op pool. float32
// uses vec_math.h's erf and exp so the loops vectorise (the C library's are
// a call per element); float64 calls the C library. The backward is one pass
// over (dy, x) instead of the ~8 ops of its composite formula.
#ifndef TENSORD_KERNELS_CPU_GELU_H_
#define TENSORD_KERNELS_CPU_GELU_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// y = x * Phi(x) (tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))).
absl::Status GeluForward(const StridedView& x, int64_t n, bool tanh,
                         const StridedView& y);

// dx = dy * d/dx gelu(x).
absl::Status GeluBackward(const StridedView& dy, const StridedView& x,
                          int64_t n, bool tanh, const StridedView& dx);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_GELU_H_

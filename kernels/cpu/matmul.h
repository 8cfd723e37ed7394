// Matrix products on the CPU: OpenBLAS GEMM for float32/float64, a blocked
// loop for integer types.
//
// Contract: a is [B, M, K], b is [B, K, N], out is [B, M, N] (B may be 1),
// any strides (broadcast batch dims have stride 0); out does not overlap a/b
// and has the common dtype of a and b.
#ifndef TENSORD_KERNELS_CPU_MATMUL_H_
#define TENSORD_KERNELS_CPU_MATMUL_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

absl::Status BatchedMatmul(const StridedView& a, const StridedView& b,
                           const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_MATMUL_H_

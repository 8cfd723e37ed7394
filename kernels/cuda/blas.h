// Matrix products through cuBLAS (cublasGemmStridedBatchedEx). Plain C++
// header; the definitions exist only in CUDA builds.
//
// Contract (as kernels/cpu/matmul.h): a is [B, M, K], b is [B, K, N], out is
// a contiguous [B, M, N] of the same floating dtype (float16, bfloat16 —
// accumulated in float32, Note [Half GEMM] in blas.cc —, float32, float64);
// batch strides may be 0 (broadcast). Each matrix of a and b must have one unit
// stride (GemmLayoutOk); the runtime makes other operands contiguous first.
// TF32 is used for float32 only when `allow_tf32` (off by default, as in
// PyTorch). Asynchronous on `stream`.
#ifndef TENSORD_KERNELS_CUDA_BLAS_H_
#define TENSORD_KERNELS_CUDA_BLAS_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

// Whether a 3-d view's matrices are row- or column-major (cuBLAS can read
// them without a copy).
bool GemmLayoutOk(const StridedView& m);

absl::Status BatchedMatmul(const StridedView& a, const StridedView& b,
                           const StridedView& out, bool allow_tf32,
                           StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_BLAS_H_

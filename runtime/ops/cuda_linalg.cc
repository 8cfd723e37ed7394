// The matmul rows' device switch: OpenBLAS on the CPU, cuBLAS on CUDA.
#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/cuda_kernels.h"

#if TENSORD_WITH_CUDA
#include "kernels/cuda/blas.h"
#include "kernels/cuda/elementwise.h"
#endif

namespace tensord {

#if TENSORD_WITH_CUDA
namespace {

// `v` itself when cuBLAS can read it, else a contiguous copy in `*keep`
// (freed after the GEMM is enqueued: stream-ordered reuse is safe).
absl::StatusOr<StridedView> GemmReady(const StridedView& v, Device* device,
                                      const OpContext& ctx, Tensor* keep) {
  if (cuda::GemmLayoutOk(v)) return v;
  StridedView src = v;
  if (v.strides[0] == 0) src.sizes[0] = 1;  // one copy of a broadcast batch
  TD_ASSIGN_OR_RETURN(
      *keep, Tensor::Empty(device, v.dtype,
                           Shape(src.sizes, src.sizes + src.ndim), ctx.alloc));
  TD_RETURN_IF_ERROR(cuda::Copy(src, keep->view(), ctx.alloc.stream));
  StridedView out = keep->view();
  out.sizes[0] = v.sizes[0];
  if (v.strides[0] == 0) out.strides[0] = 0;
  return out;
}

}  // namespace
#endif

absl::Status DeviceBatchedMatmul(const Tensor& out, const OpContext& ctx,
                                 const StridedView& a, const StridedView& b,
                                 const StridedView& out_view) {
  if (out.device()->kind() == DeviceKind::kCpu) {
    return cpu::BatchedMatmul(a, b, out_view);
  }
#if TENSORD_WITH_CUDA
  Tensor keep_a, keep_b;
  TD_ASSIGN_OR_RETURN(StridedView ga, GemmReady(a, out.device(), ctx, &keep_a));
  TD_ASSIGN_OR_RETURN(StridedView gb, GemmReady(b, out.device(), ctx, &keep_b));
  return cuda::BatchedMatmul(ga, gb, out_view, ctx.allow_tf32,
                             ctx.alloc.stream);
#else
  (void)ctx;
  return absl::UnimplementedError(
      absl::StrCat("matmul on ", out.device()->name(), " needs CUDA"));
#endif
}

}  // namespace tensord

// The reduction rows' device switch: the CPU kernels, or the CUDA ones on
// the session's stream (kernels/cuda/reduce.h mirrors kernels/cpu/reduce.h).
#include "absl/strings/str_cat.h"
#include "runtime/ops/cuda_kernels.h"

#if TENSORD_WITH_CUDA
#include "kernels/cuda/reduce.h"
#endif

namespace tensord {

#if TENSORD_WITH_CUDA
bool CudaKernelsBuilt() { return true; }
#else
bool CudaKernelsBuilt() { return false; }
#endif

absl::Status DeviceReduce(const Tensor& out, const OpContext& ctx,
                          cpu::ReduceOp op, const StridedView& in,
                          const bool* reduced, const StridedView& out_view) {
  if (out.device()->kind() == DeviceKind::kCpu) {
    return cpu::Reduce(op, in, reduced, out_view);
  }
#if TENSORD_WITH_CUDA
  return cuda::Reduce(op, in, reduced, out_view, ctx.alloc.stream);
#else
  (void)ctx;
  return absl::UnimplementedError(
      absl::StrCat("reductions on ", out.device()->name(), " need CUDA"));
#endif
}

absl::Status DeviceReduceStat(const Tensor& out, const OpContext& ctx,
                              cpu::StatOp op, const StridedView& in,
                              const bool* reduced, double param,
                              const StridedView& out_view) {
  if (out.device()->kind() == DeviceKind::kCpu) {
    return cpu::ReduceStat(op, in, reduced, param, out_view);
  }
#if TENSORD_WITH_CUDA
  return cuda::ReduceStat(op, in, reduced, param, out_view, ctx.alloc.stream);
#else
  (void)ctx;
  return absl::UnimplementedError(
      absl::StrCat("reductions on ", out.device()->name(), " need CUDA"));
#endif
}

}  // namespace tensord

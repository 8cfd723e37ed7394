// The distance rows' device switch (distance_ops.cc): kernels/cpu/distance.h
// and histogram.h, or their CUDA twins in kernels/cuda/distance.h on the
// session's stream.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/distance.h"
#include "kernels/cpu/histogram.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/cuda_kernels.h"

#if TENSORD_WITH_CUDA
#include "kernels/cuda/distance.h"
#endif

namespace tensord {
namespace {

#if !TENSORD_WITH_CUDA
absl::Status NoCuda(const Tensor& out) {
  return absl::UnimplementedError(
      absl::StrCat("distance ops on ", out.device()->name(), " need CUDA"));
}
#endif

bool OnCpu(const Tensor& out) {
  return out.device()->kind() == DeviceKind::kCpu;
}

}  // namespace

absl::Status DeviceCdist(const Tensor& out, const OpContext& ctx,
                         const StridedView& x1, const StridedView& x2,
                         double p) {
  if (OnCpu(out)) return cpu::Cdist(x1, x2, p, out.view());
#if TENSORD_WITH_CUDA
  return cuda::Cdist(x1, x2, p, out.view(), ctx.alloc.stream);
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

absl::Status DeviceCdistBackward(const Tensor& out, const OpContext& ctx,
                                 const StridedView& grad, const StridedView& x1,
                                 const StridedView& x2, const StridedView& dist,
                                 double p) {
  if (OnCpu(out)) return cpu::CdistBackward(grad, x1, x2, dist, p, out.view());
#if TENSORD_WITH_CUDA
  return cuda::CdistBackward(grad, x1, x2, dist, p, out.view(),
                             ctx.alloc.stream);
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

absl::Status DevicePdist(const Tensor& out, const OpContext& ctx,
                         const StridedView& x, double p) {
  if (OnCpu(out)) return cpu::Pdist(x, p, out.view());
#if TENSORD_WITH_CUDA
  return cuda::Pdist(x, p, out.view(), ctx.alloc.stream);
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

absl::Status DevicePdistBackward(const Tensor& out, const OpContext& ctx,
                                 const StridedView& grad, const StridedView& x,
                                 const StridedView& dist, double p) {
  if (OnCpu(out)) return cpu::PdistBackward(grad, x, dist, p, out.view());
#if TENSORD_WITH_CUDA
  return cuda::PdistBackward(grad, x, dist, p, out.view(), ctx.alloc.stream);
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

absl::Status DeviceHistc(const Tensor& out, const OpContext& ctx,
                         const StridedView& in, double lo, double hi) {
  if (OnCpu(out)) return cpu::Histc(in, lo, hi, out.view());
#if TENSORD_WITH_CUDA
  // The scratch lives until the work is enqueued: the caching allocator's
  // reuse is ordered on the session's stream.
  TD_ASSIGN_OR_RETURN(Tensor counts,
                      Tensor::Empty(out.device(), DType::kInt64,
                                    Shape{out.numel()}, ctx.alloc));
  return cuda::Histc(in, lo, hi, out.view(),
                     static_cast<uint64_t*>(counts.data()), ctx.alloc.stream);
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

}  // namespace tensord

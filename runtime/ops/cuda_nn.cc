// CUDA wrappers for softmax/log_softmax and the random creation rows
// (attached by name: cuda_kernels.h). The fused training rows
// (native_layer_norm, native_batch_norm, fused_cross_entropy and their
// backward rows) have theirs in cuda_norm.cc; the losses, norms and dropout
// rows are composites, and on CUDA still run through the rows they compose
// (norm_ops.cc and nll_loss_ops.cc pick the fused rows on the CPU only).
#include "runtime/ops/cuda_kernels.h"

#if TENSORD_WITH_CUDA
#include "kernels/cuda/nn.h"
#include "kernels/cuda/random.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#endif

namespace tensord {

#if TENSORD_WITH_CUDA
namespace {

using Ins = absl::Span<const Tensor>;

template <bool kLog>
absl::Status CudaSoftmax(Ins in, Ins out, const Attrs& attrs,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), in[0].ndim()));
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  TD_ASSIGN_OR_RETURN(x, Contiguous(x, ctx));
  int64_t outer = 1, dim = 1, inner = 1;
  for (int k = 0; k < x.ndim(); ++k) {
    (k < d ? outer : k == d ? dim : inner) *= x.shape()[k];
  }
  return cuda::Softmax(x.view(), outer, dim, inner, kLog, out[0].view(),
                       ctx.alloc.stream);
}

// The same counter reservation as the CPU row, so a seeded session draws
// the same numbers on either device.
template <cuda::Distribution kDist>
absl::Status CudaRandom(Ins, Ins out, const Attrs&, const OpContext& ctx) {
  const uint64_t offset = ctx.generator->Reserve(out[0].numel());
  return cuda::FillRandom(kDist, ctx.generator->seed(), offset, out[0].view(),
                          ctx.alloc.stream);
}

}  // namespace

void AddCudaNnKernels(CudaKernelMap* map) {
  (*map)["softmax"] = CudaSoftmax<false>;
  (*map)["log_softmax"] = CudaSoftmax<true>;
  (*map)["rand"] = CudaRandom<cuda::Distribution::kUniform>;
  (*map)["randn"] = CudaRandom<cuda::Distribution::kNormal>;
}

#else
void AddCudaNnKernels(CudaKernelMap*) {}
#endif

}  // namespace tensord

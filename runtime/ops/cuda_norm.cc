// CUDA wrappers for the fused training rows (attached by name:
// cuda_kernels.h): native_layer_norm, native_batch_norm and
// fused_cross_entropy with their backward rows, over kernels/cuda/norm.h and
// loss.h. Their rows (layer_norm_ops.cc, batch_norm_ops.cc,
// cross_entropy_ops.cc) validated shapes, dtypes and attributes; these make
// the operands contiguous, as the CPU wrappers do, and enqueue on
// ctx.alloc.stream. gelu_backward's wrapper is cuda_pointwise.cc's.
#include "runtime/ops/cuda_kernels.h"

#if TENSORD_WITH_CUDA
#include "absl/strings/str_cat.h"
#include "kernels/cuda/loss.h"
#include "kernels/cuda/norm.h"
#include "runtime/core/status_macros.h"
#include "runtime/device.h"
#include "runtime/ops/cross_entropy_geometry.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#endif

namespace tensord {

#if TENSORD_WITH_CUDA
namespace {

using Ins = absl::Span<const Tensor>;

const StridedView kNoView{nullptr};

// Input i's view, empty when the call did not pass it.
StridedView OptionalView(const std::vector<Tensor>& c, size_t i) {
  return c.size() > i ? c[i].view() : kNoView;
}

// Rows and the normalized size, as layer_norm_ops.cc's Rows.
std::pair<int64_t, int64_t> LayerNormRows(const Tensor& x, const Attrs& attrs) {
  int64_t n = 1;
  for (int64_t s : attrs.Ints("normalized_shape")) n *= s;
  return {n == 0 ? 0 : x.numel() / n, n};
}

absl::Status CudaLayerNorm(Ins in, Ins out, const Attrs& attrs,
                           const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  const auto [m, n] = LayerNormRows(c[0], attrs);
  return cuda::LayerNormForward(c[0].view(), m, n, OptionalView(c, 1),
                                OptionalView(c, 2), attrs.Float("eps"),
                                out[0].view(), out[1].view(), out[2].view(),
                                ctx.alloc.stream);
}

absl::Status CudaLayerNormBackward(Ins in, Ins out, const Attrs& attrs,
                                   const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  const auto [m, n] = LayerNormRows(c[1], attrs);
  return cuda::LayerNormBackward(c[0].view(), c[1].view(), m, n, c[2].view(),
                                 c[3].view(), OptionalView(c, 4), out[0].view(),
                                 out[1].view(), out[2].view(),
                                 ctx.alloc.stream);
}

absl::Status CudaBatchNorm(Ins in, Ins out, const Attrs& attrs,
                           const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cuda::BatchNormForward(
      c[0].view(), OptionalView(c, 1), OptionalView(c, 2), attrs.Float("eps"),
      out[0].view(), out[1].view(), out[2].view(), ctx.alloc.stream);
}

absl::Status CudaBatchNormBackward(Ins in, Ins out, const Attrs& attrs,
                                   const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cuda::BatchNormBackward(
      c[0].view(), c[1].view(), c[2].view(), c[3].view(), OptionalView(c, 4),
      attrs.Float("eps"), out[0].view(), out[1].view(), out[2].view(),
      ctx.alloc.stream);
}

// The forward reads back the kernel's bad-target flag (as cuda_index.cc's
// index check: the op waits for the GPU, so a bad target is a clean
// INVALID_ARGUMENT with the CPU's message, not garbage or a sticky error).
absl::Status CudaCrossEntropy(Ins in, Ins out, const Attrs& attrs,
                              const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  TD_ASSIGN_OR_RETURN(
      const CrossEntropyGeometry g,
      CrossEntropyGeometryOf(c[0], c[1], attrs, "fused_cross_entropy"));
  const int64_t rows = g.n * g.s;
  Device* device = out[0].device();
  StreamHandle stream = ctx.alloc.stream;
  Tensor scratch, flag;  // freed after the enqueue: stream-ordered reuse
  double* row_loss = nullptr;
  int64_t* bad = nullptr;
  if (rows > 0) {
    if (g.reduction != LossReduction::kNone) {
      TD_ASSIGN_OR_RETURN(scratch, Tensor::Empty(device, DType::kFloat64,
                                                 Shape{rows}, ctx.alloc));
      row_loss = static_cast<double*>(scratch.data());
    }
    TD_ASSIGN_OR_RETURN(
        flag, Tensor::Empty(device, DType::kInt64, Shape{1}, ctx.alloc));
    bad = static_cast<int64_t*>(flag.data());
    TD_RETURN_IF_ERROR(cuda::ResetBadTarget(bad, stream));
  }
  TD_RETURN_IF_ERROR(cuda::CrossEntropyForward(
      c[0].view(), c[1].view(), OptionalView(c, 2), g, out[0].view(),
      out[1].view(), out[2].view(), row_loss, bad, stream));
  if (bad == nullptr) return absl::OkStatus();
  int64_t position = -1;
  TD_RETURN_IF_ERROR(
      device->CopyToHost(&position, bad, sizeof(position), stream));
  if (position == -1) return absl::OkStatus();
  int64_t value = 0;
  TD_RETURN_IF_ERROR(device->CopyToHost(
      &value, static_cast<const int64_t*>(c[1].data()) + position,
      sizeof(value), stream));
  return absl::InvalidArgumentError(
      absl::StrCat("cross_entropy: target ", value, " at position ", position,
                   " is out of bounds for ", g.c, " classes"));
}

// (grad, input, target, lse, total_weight[, weight]) -> grad_input.
absl::Status CudaCrossEntropyBackward(Ins in, Ins out, const Attrs& attrs,
                                      const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  TD_ASSIGN_OR_RETURN(const CrossEntropyGeometry g,
                      CrossEntropyGeometryOf(c[1], c[2], attrs,
                                             "fused_cross_entropy_backward"));
  return cuda::CrossEntropyBackward(
      c[0].view(), c[1].view(), c[2].view(), OptionalView(c, 5), c[3].view(),
      c[4].view(), g, out[0].view(), ctx.alloc.stream);
}

}  // namespace

void AddCudaNormKernels(CudaKernelMap* map) {
  (*map)["native_layer_norm"] = CudaLayerNorm;
  (*map)["native_layer_norm_backward"] = CudaLayerNormBackward;
  (*map)["native_batch_norm"] = CudaBatchNorm;
  (*map)["native_batch_norm_backward"] = CudaBatchNormBackward;
  (*map)["fused_cross_entropy"] = CudaCrossEntropy;
  (*map)["fused_cross_entropy_backward"] = CudaCrossEntropyBackward;
}

#else
void AddCudaNormKernels(CudaKernelMap*) {}
#endif

}  // namespace tensord

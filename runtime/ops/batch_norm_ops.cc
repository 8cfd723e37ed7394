// native_batch_norm and its backward: batch_norm's training step as two fused
// CPU kernels (kernels/cpu/batch_norm.h), as PyTorch's rows of the same
// names. batch_norm (norm_ops.cc) calls them on the CPU when training; the
// running statistics stay its [C]-sized composite. Both rows have CUDA
// kernels too (cuda_norm.cc, kernels/cuda/norm.h), but batch_norm on CUDA
// still takes its mean/var composite.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/batch_norm.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;

// in[first..] are [C] vectors of x's dtype.
absl::Status CheckChannelVectors(const Tensor& x, absl::Span<const Tensor> in,
                                 size_t first, const char* op) {
  for (size_t i = first; i < in.size(); ++i) {
    if (in[i].ndim() != 1 || in[i].shape()[0] != x.shape()[1] ||
        in[i].dtype() != x.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": expected input ", i, " to be a ", DTypeName(x.dtype()),
          " vector of ", x.shape()[1], " channels, got ",
          DTypeName(in[i].dtype()), " ", ShapeToString(in[i].shape())));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckInput(const Tensor& x, const char* op) {
  TD_RETURN_IF_ERROR(RequireFloating(x, op));
  if (x.ndim() < 2 || x.numel() / std::max<int64_t>(x.shape()[1], 1) <= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": expected more than 1 value per channel, got ",
                     "input size ", ShapeToString(x.shape())));
  }
  return absl::OkStatus();
}

// (input[, weight[, bias]]) -> (output, mean, biased var).
Specs InferForward(absl::Span<const Tensor> in, const Attrs&,
                   const OpContext&) {
  const Tensor& x = in[0];
  TD_RETURN_IF_ERROR(CheckInput(x, "native_batch_norm"));
  TD_RETURN_IF_ERROR(CheckChannelVectors(x, in, 1, "native_batch_norm"));
  const Shape c{x.shape()[1]};
  return std::vector<TensorSpec>{{x.dtype(), x.shape(), x.device()},
                                 {x.dtype(), c, x.device()},
                                 {x.dtype(), c, x.device()}};
}

absl::Status CpuForward(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs& attrs,
                        const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  const StridedView none{nullptr};
  return cpu::BatchNormForward(c[0].view(), c.size() > 1 ? c[1].view() : none,
                               c.size() > 2 ? c[2].view() : none,
                               attrs.Float("eps"), out[0].view(), out[1].view(),
                               out[2].view());
}

// (grad, input, mean, var[, weight]) -> (grad_input, grad_weight, grad_bias).
Specs InferBackward(absl::Span<const Tensor> in, const Attrs&,
                    const OpContext&) {
  const Tensor &dy = in[0], &x = in[1];
  TD_RETURN_IF_ERROR(CheckInput(x, "native_batch_norm_backward"));
  if (dy.shape() != x.shape() || dy.dtype() != x.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "native_batch_norm_backward: grad ", ShapeToString(dy.shape()),
        " must match input ", ShapeToString(x.shape())));
  }
  TD_RETURN_IF_ERROR(
      CheckChannelVectors(x, in, 2, "native_batch_norm_backward"));
  const Shape c{x.shape()[1]};
  return std::vector<TensorSpec>{{x.dtype(), x.shape(), x.device()},
                                 {x.dtype(), c, x.device()},
                                 {x.dtype(), c, x.device()}};
}

absl::Status CpuBackward(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs& attrs,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::BatchNormBackward(
      c[0].view(), c[1].view(), c[2].view(), c[3].view(),
      c.size() > 4 ? c[4].view() : StridedView{nullptr}, attrs.Float("eps"),
      out[0].view(), out[1].view(), out[2].view());
}

}  // namespace

std::vector<OpDef> BatchNormOps() {
  std::vector<OpDef> ops;
  const AttrSpec eps = Optional("eps", AttrType::kFloat, 1e-5);
  OpDef fwd = MakeOp("native_batch_norm", 1, 3, {eps},
                     "batch_norm's training forward, fused: (input[, weight[, "
                     "bias]]) -> (output, mean, biased var) over all dims "
                     "but 1.");
  fwd.num_outputs = 3;
  fwd.infer = InferForward;
  fwd.cpu = CpuForward;
  fwd.examples = {Example({{4, 3, 2, 2}, {3}, {3}}), Example({{5, 3}})};
  ops.push_back(std::move(fwd));
  OpDef bwd = MakeOp("native_batch_norm_backward", 4, 5, {eps},
                     "native_batch_norm's gradients: (grad, input, mean, var[, "
                     "weight]) -> (grad_input, grad_weight, grad_bias).");
  bwd.num_outputs = 3;
  bwd.infer = InferBackward;
  bwd.cpu = CpuBackward;
  bwd.differentiable = false;
  bwd.examples = {Example({{4, 3, 2, 2}, {4, 3, 2, 2}, {3}, {3}, {3}})};
  bwd.examples[0].positive = true;  // a variance is not negative
  ops.push_back(std::move(bwd));
  return ops;
}

}  // namespace tensord

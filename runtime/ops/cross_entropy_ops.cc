// fused_cross_entropy and its backward: cross_entropy with class-index
// targets as one CPU kernel each way (kernels/cpu/cross_entropy.h): the
// loss, each position's log-sum-exp (all the backward needs of the forward
// besides the logits) and the total weight. cross_entropy and nll_loss
// (log_probs: no log_softmax) (nll_loss_ops.cc) call the forward on the CPU;
// probability targets, and every target on CUDA, keep the composite. Both
// rows have CUDA kernels too (cuda_norm.cc, kernels/cuda/loss.h).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/cross_entropy.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/cross_entropy_geometry.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {

absl::StatusOr<CrossEntropyGeometry> CrossEntropyGeometryOf(
    const Tensor& x, const Tensor& target, const Attrs& attrs, const char* op) {
  TD_RETURN_IF_ERROR(RequireFloating(x, op));
  CrossEntropyGeometry g;
  const std::string& r = attrs.String("reduction");
  if (r == "none") {
    g.reduction = LossReduction::kNone;
  } else if (r == "mean") {
    g.reduction = LossReduction::kMean;
  } else if (r == "sum") {
    g.reduction = LossReduction::kSum;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        r, " is not a valid value for reduction (mean, sum or none)"));
  }
  g.label_smoothing = attrs.Float("label_smoothing");
  if (!(g.label_smoothing >= 0 && g.label_smoothing <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("label_smoothing must be between 0.0 and 1.0. Got: ",
                     g.label_smoothing));
  }
  g.ignore_index = attrs.Int("ignore_index");
  g.log_probs = attrs.Bool("log_probs");
  if (x.ndim() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": input must have a class dim, got a 0-d tensor"));
  }
  const int cdim = x.ndim() == 1 ? 0 : 1;
  g.n = x.ndim() == 1 ? 1 : x.shape()[0];
  g.c = x.shape()[cdim];
  g.s = 1;
  for (int d = 2; d < x.ndim(); ++d) g.s *= x.shape()[d];
  Shape want = x.shape();
  want.erase(want.begin() + cdim);
  if (target.dtype() != DType::kInt64 || target.shape() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": expected int64 class indices of shape ", ShapeToString(want),
        " for input ", ShapeToString(x.shape()), ", got ",
        DTypeName(target.dtype()), " ", ShapeToString(target.shape())));
  }
  return g;
}

namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;

absl::Status CheckWeight(const Tensor& x, absl::Span<const Tensor> in, size_t i,
                         int64_t c, const char* op) {
  if (in.size() <= i) return absl::OkStatus();
  if (in[i].ndim() != 1 || in[i].shape()[0] != c ||
      in[i].dtype() != x.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": weight should be a ", DTypeName(x.dtype()), " vector of ", c,
        " classes, got ", DTypeName(in[i].dtype()), " ",
        ShapeToString(in[i].shape())));
  }
  return absl::OkStatus();
}

// (input, target[, weight]) -> (loss, lse, total_weight).
Specs InferForward(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  const char* op = "fused_cross_entropy";
  const Tensor& x = in[0];
  TD_ASSIGN_OR_RETURN(CrossEntropyGeometry g,
                      CrossEntropyGeometryOf(x, in[1], attrs, op));
  TD_RETURN_IF_ERROR(CheckWeight(x, in, 2, g.c, op));
  const Shape& t = in[1].shape();
  const Shape loss = g.reduction == LossReduction::kNone ? t : Shape{};
  return std::vector<TensorSpec>{{x.dtype(), loss, x.device()},
                                 {x.dtype(), t, x.device()},
                                 {x.dtype(), Shape{}, x.device()}};
}

absl::Status CpuForward(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs& attrs,
                        const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(
      CrossEntropyGeometry g,
      CrossEntropyGeometryOf(in[0], in[1], attrs, "fused_cross_entropy"));
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::CrossEntropyForward(
      c[0].view(), c[1].view(),
      c.size() > 2 ? c[2].view() : StridedView{nullptr}, g, out[0].view(),
      out[1].view(), out[2].view());
}

// (grad, input, target, lse, total_weight[, weight]) -> grad_input.
Specs InferBackward(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  const char* op = "fused_cross_entropy_backward";
  const Tensor& x = in[1];
  TD_ASSIGN_OR_RETURN(CrossEntropyGeometry g,
                      CrossEntropyGeometryOf(x, in[2], attrs, op));
  TD_RETURN_IF_ERROR(CheckWeight(x, in, 5, g.c, op));
  const Shape& t = in[2].shape();
  const Shape loss = g.reduction == LossReduction::kNone ? t : Shape{};
  const Shape want[] = {loss, x.shape(), t, t, Shape{}};
  for (int i : {0, 3, 4}) {
    TD_RETURN_IF_ERROR(RequireInput(op, i, in[i], x.dtype(), want[i]));
  }
  return std::vector<TensorSpec>{{x.dtype(), x.shape(), x.device()}};
}

absl::Status CpuBackward(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs& attrs,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(CrossEntropyGeometry g,
                      CrossEntropyGeometryOf(in[1], in[2], attrs,
                                             "fused_cross_entropy_backward"));
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::CrossEntropyBackward(
      c[0].view(), c[1].view(), c[2].view(),
      c.size() > 5 ? c[5].view() : StridedView{nullptr}, c[3].view(),
      c[4].view(), g, out[0].view());
}

}  // namespace

std::vector<OpDef> CrossEntropyOps() {
  std::vector<OpDef> ops;
  const std::vector<AttrSpec> attrs = {
      Optional("reduction", AttrType::kString, std::string("mean")),
      Optional("ignore_index", AttrType::kInt, int64_t{-100}),
      Optional("label_smoothing", AttrType::kFloat, 0.0),
      Optional("log_probs", AttrType::kBool, false)};
  OpDef fwd = MakeOp("fused_cross_entropy", 2, 3, attrs,
                     "cross_entropy with class-index targets, fused: (input "
                     "[N, C, ...], target[, weight]) -> (loss, each "
                     "position's log-sum-exp, total weight). log_probs: the "
                     "input is log-probabilities (nll_loss; the log-sum-exp "
                     "is 0).");
  fwd.num_outputs = 3;
  fwd.infer = InferForward;
  fwd.cpu = CpuForward;
  fwd.examples = {
      Example({{4, 3}, {4}}, {{"label_smoothing", 0.1}},
              {DType::kFloat32, DType::kInt64}),
      Example({{2, 3, 5}, {2, 5}, {3}}, {{"reduction", std::string("none")}},
              {DType::kFloat32, DType::kInt64, DType::kFloat32}),
      Example({{4, 3}, {4}, {3}}, {{"log_probs", true}},
              {DType::kFloat32, DType::kInt64, DType::kFloat32})};
  ops.push_back(std::move(fwd));
  OpDef bwd = MakeOp("fused_cross_entropy_backward", 5, 6, attrs,
                     "fused_cross_entropy's input gradient: (grad, input, "
                     "target, lse, total_weight[, weight]) -> grad_input.");
  bwd.infer = InferBackward;
  bwd.cpu = CpuBackward;
  bwd.differentiable = false;
  bwd.examples = {Example({{}, {4, 3}, {4}, {4}, {}},
                          {{"label_smoothing", 0.1}},
                          {DType::kFloat32, DType::kFloat32, DType::kInt64})};
  bwd.examples[0].positive = true;  // a total weight is positive
  ops.push_back(std::move(bwd));
  return ops;
}

}  // namespace tensord

// The multi-class margin losses: multi_margin_loss,
// multilabel_margin_loss_forward and their _backward ops (PyTorch's aten ops
// of the same names and schemas; kernels/cpu/margin_loss.h), the forwards'
// gradient formulas the backward rows. reduction is the losses' string
// attribute ("mean", "sum", "none"); "none" gives multi_margin_loss the
// target's shape and multilabel_margin_loss [N] ([] for a vector), as
// PyTorch. CPU only (in KnownCpuOnly): no sibling CUDA kernel. Half inputs
// compute in float32 (Note [Half compute]).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/margin_loss.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/derivatives.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/index_checks.h"
#include "runtime/ops/loss_reduction.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
constexpr char kMulti[] = "multi_margin_loss_backward";
constexpr char kLabel[] = "multilabel_margin_loss_backward";
constexpr char kMultiForward[] = "multi_margin_loss";
constexpr char kLabelForward[] = "multilabel_margin_loss_forward";

cpu::LossReduction ReductionOf(const Attrs& attrs) {
  const std::string& r = attrs.String("reduction");
  if (r == "none") return cpu::LossReduction::kNone;
  return r == "sum" ? cpu::LossReduction::kSum : cpu::LossReduction::kMean;
}

// What every row checks of self: a non-empty scalar, vector or [N, C] of a
// floating dtype; and a known reduction. Returns N.
absl::StatusOr<int64_t> CheckSelf(const Tensor& self, const Attrs& attrs,
                                  const char* op) {
  TD_RETURN_IF_ERROR(RequireFloating(self, op));
  TD_RETURN_IF_ERROR(CheckReduction(attrs.String("reduction")));
  if (self.ndim() > 2 || self.numel() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        op,
        ": expected a non-empty vector or matrix with optional 0-dim "
        "batch size, got ",
        ShapeToString(self.shape())));
  }
  return self.ndim() == 2 ? self.shape()[0] : 1;
}

// The backward rows' grad_output: self's dtype, N values ("none") or one.
absl::Status CheckGradOutput(const Tensor& go, const Tensor& self, int64_t n,
                             const Attrs& attrs, const char* op) {
  const int64_t want = attrs.String("reduction") == "none" ? n : 1;
  if (go.dtype() != self.dtype() || go.numel() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": expected grad_output of ", want, " ", DTypeName(self.dtype()),
        " values, got ", DTypeName(go.dtype()), ShapeToString(go.shape())));
  }
  return absl::OkStatus();
}

// multi_margin_loss's (self, target [N] int64, weight [C]?) and p.
absl::Status CheckMultiArgs(absl::Span<const Tensor> in, int64_t n,
                            const Attrs& attrs, const char* op) {
  const Tensor &self = in[0], &target = in[1];
  TD_RETURN_IF_ERROR(RequireInt64(target, op));
  if (target.ndim() > 1 || target.numel() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": inconsistent target size, expected ", n,
                     " but got ", ShapeToString(target.shape())));
  }
  const double p = attrs.Float("p");
  if (p != 1 && p != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": only p == 1 and p == 2 supported, got ", p));
  }
  const int64_t c = self.ndim() == 0 ? 1 : self.shape().back();
  if (in.size() == 3 && (in[2].dtype() != self.dtype() || in[2].ndim() > 1 ||
                         in[2].numel() != c)) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": inconsistent weight size, expected ", c, " ",
                     DTypeName(self.dtype()), " values but got ",
                     DTypeName(in[2].dtype()), ShapeToString(in[2].shape())));
  }
  return absl::OkStatus();
}

// multilabel_margin_loss's target: int64 of self's size.
absl::Status CheckLabelTarget(const Tensor& self, const Tensor& target,
                              const char* op) {
  TD_RETURN_IF_ERROR(RequireInt64(target, op));
  if (target.shape() != self.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": inconsistent target size: ", ShapeToString(target.shape()),
        " for input of size: ", ShapeToString(self.shape())));
  }
  return absl::OkStatus();
}

// ---- the backward rows: (grad_output, self, target, weight?) and
// (grad_output, self, target, is_target) -> self's gradient.
Specs InferMulti(absl::Span<const Tensor> in, const Attrs& attrs,
                 const OpContext&) {
  const Tensor& self = in[1];
  TD_ASSIGN_OR_RETURN(int64_t n, CheckSelf(self, attrs, kMulti));
  TD_RETURN_IF_ERROR(CheckGradOutput(in[0], self, n, attrs, kMulti));
  TD_RETURN_IF_ERROR(CheckMultiArgs(in.subspan(1), n, attrs, kMulti));
  return std::vector<TensorSpec>{{self.dtype(), self.shape(), self.device()}};
}

absl::Status Multi(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                   const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::MultiMarginLossBackward(
      c[0].view(), c[1].view(), c[2].view(),
      c.size() == 4 ? c[3].view() : StridedView{},
      static_cast<int>(attrs.Float("p")), attrs.Float("margin"),
      ReductionOf(attrs), out[0].view());
}

Specs InferLabel(absl::Span<const Tensor> in, const Attrs& attrs,
                 const OpContext&) {
  const Tensor &self = in[1], &is_target = in[3];
  TD_ASSIGN_OR_RETURN(int64_t n, CheckSelf(self, attrs, kLabel));
  TD_RETURN_IF_ERROR(CheckGradOutput(in[0], self, n, attrs, kLabel));
  TD_RETURN_IF_ERROR(CheckLabelTarget(self, in[2], kLabel));
  if (is_target.shape() != self.shape() || is_target.dtype() != self.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kLabel, ": expected is_target of input's size and dtype, got ",
        DTypeName(is_target.dtype()), ShapeToString(is_target.shape())));
  }
  return std::vector<TensorSpec>{{self.dtype(), self.shape(), self.device()}};
}

absl::Status Label(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                   const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::MultilabelMarginLossBackward(c[0].view(), c[1].view(),
                                           c[2].view(), c[3].view(),
                                           ReductionOf(attrs), out[0].view());
}

// ---- the forwards: (self, target, weight?) and (self, target). The loss
// is [N] or the target's shape ("none"), else a scalar.
absl::StatusOr<Shape> LossShape(const Tensor& self, const Tensor& target,
                                const Attrs& attrs, bool multilabel) {
  if (attrs.String("reduction") != "none") return Shape{};
  if (!multilabel) return target.shape();
  return self.ndim() == 2 ? Shape{self.shape()[0]} : Shape{};
}

Specs InferMultiForward(absl::Span<const Tensor> in, const Attrs& attrs,
                        const OpContext&) {
  const Tensor& self = in[0];
  TD_ASSIGN_OR_RETURN(int64_t n, CheckSelf(self, attrs, kMultiForward));
  TD_RETURN_IF_ERROR(CheckMultiArgs(in, n, attrs, kMultiForward));
  TD_ASSIGN_OR_RETURN(Shape shape, LossShape(self, in[1], attrs, false));
  return std::vector<TensorSpec>{{self.dtype(), shape, self.device()}};
}

absl::Status MultiForward(absl::Span<const Tensor> in,
                          absl::Span<const Tensor> out, const Attrs& attrs,
                          const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::MultiMarginLoss(
      c[0].view(), c[1].view(), c.size() == 3 ? c[2].view() : StridedView{},
      static_cast<int>(attrs.Float("p")), attrs.Float("margin"),
      ReductionOf(attrs), out[0].view());
}

Specs InferLabelForward(absl::Span<const Tensor> in, const Attrs& attrs,
                        const OpContext&) {
  const Tensor& self = in[0];
  TD_RETURN_IF_ERROR(CheckSelf(self, attrs, kLabelForward).status());
  TD_RETURN_IF_ERROR(CheckLabelTarget(self, in[1], kLabelForward));
  TD_ASSIGN_OR_RETURN(Shape shape, LossShape(self, in[1], attrs, true));
  return std::vector<TensorSpec>{{self.dtype(), shape, self.device()},
                                 {self.dtype(), self.shape(), self.device()}};
}

absl::Status LabelForward(absl::Span<const Tensor> in,
                          absl::Span<const Tensor> out, const Attrs& attrs,
                          const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::MultilabelMarginLoss(c[0].view(), c[1].view(), ReductionOf(attrs),
                                   out[0].view(), out[1].view());
}

Grads MultiGrad(GradCtx& g) {
  Grads r(g.num_inputs());
  if (g.needs(0)) {
    std::vector<GradValue> in = {g.grad(), g.in(0), g.in(1)};
    if (g.num_inputs() == 3) in.push_back(g.in(2));
    r[0] = g.Op(kMulti, std::move(in),
                {{"p", g.attrs().Float("p")},
                 {"margin", g.attrs().Float("margin")},
                 {"reduction", g.attrs().String("reduction")}});
  }
  return r;
}

Grads LabelGrad(GradCtx& g) {
  Grads r(g.num_inputs());
  if (g.needs(0)) {
    r[0] = g.Op(kLabel, {g.grad(), g.in(0), g.in(1), g.out(1)},
                {{"reduction", g.attrs().String("reduction")}});
  }
  return r;
}

AttrSpec ReductionAttr() {
  return Optional("reduction", AttrType::kString, std::string("mean"));
}

}  // namespace

std::vector<GradRow> MarginLossGrads() {
  return {{kMultiForward, {0, 1, 2}, {}, MultiGrad},
          {kLabelForward, {0, 1}, {1}, LabelGrad}};
}

std::vector<OpDef> MarginLossOps() {
  const DType f = DType::kFloat32, i = DType::kInt64;
  std::vector<OpDef> ops;
  OpDef mf =
      MakeOp(kMultiForward, 2, 3,
             {Optional("p", AttrType::kFloat, 1.0),
              Optional("margin", AttrType::kFloat, 1.0), ReductionAttr()},
             "torch.nn.functional.multi_margin_loss: (self [N, C], [C] or [], "
             "target [N] int64, weight [C]?) -> sum over i != y of w[y] max(0, "
             "margin - x[y] + x[i])^p / C per row, reduced; p 1 or 2.");
  mf.infer = InferMultiForward;
  mf.cpu = MultiForward;
  mf.examples = {
      Example({{3, 4}, {3}}, {}, {f, i}),
      Example({{3, 4}, {3}, {4}},
              {{"p", 2.0}, {"reduction", std::string("none")}}, {f, i, f})};
  ops.push_back(std::move(mf));
  OpDef lf = MakeOp(
      kLabelForward, 2, 2, {ReductionAttr()},
      "torch.nn.functional.multilabel_margin_loss's op: (self [N, C] or [C], "
      "target of self's size, int64 classes up to the first -1) -> (loss, "
      "is_target): sum over targets j and other classes i of max(0, 1 - "
      "x[j] + x[i]) / C per row, reduced.");
  lf.num_outputs = 2;
  lf.infer = InferLabelForward;
  lf.cpu = LabelForward;
  lf.examples = {Example({{3, 4}, {3, 4}}, {}, {f, i})};
  ops.push_back(std::move(lf));
  OpDef multi = MakeOp(
      kMulti, 3, 4,
      {Optional("p", AttrType::kFloat, 1.0),
       Optional("margin", AttrType::kFloat, 1.0), ReductionAttr()},
      "(grad_output, self [N, C], [C] or [], target [N] int64, weight [C]?) "
      "-> "
      "the gradient of multi_margin_loss w.r.t. self (p 1 or 2; used by "
      "autograd).");
  multi.differentiable = false;
  multi.infer = InferMulti;
  multi.cpu = Multi;
  multi.examples = {
      Example({{}, {3, 4}, {3}}, {}, {f, f, i}),
      Example({{3}, {3, 4}, {3}, {4}},
              {{"p", 2.0}, {"reduction", std::string("none")}}, {f, f, i, f})};
  OpDef label = MakeOp(
      kLabel, 4, 4, {ReductionAttr()},
      "(grad_output, self [N, C] or [C], target (self's size, int64 class "
      "indices up to the first -1), is_target) -> the gradient of "
      "multilabel_margin_loss w.r.t. self (used by autograd).");
  label.differentiable = false;
  label.infer = InferLabel;
  label.cpu = Label;
  label.examples = {Example({{}, {3, 4}, {3, 4}, {3, 4}}, {}, {f, f, i, f})};
  ops.push_back(std::move(multi));
  ops.push_back(std::move(label));
  return ops;
}

}  // namespace tensord

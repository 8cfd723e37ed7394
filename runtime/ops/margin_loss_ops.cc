// multi_margin_loss_backward and multilabel_margin_loss_backward (PyTorch's
// aten ops of the same names and schemas; kernels/cpu/margin_loss.h): the
// input gradients of the multi-class margin losses, whose forwards run as
// PyTorch's decompositions on the device's ops. reduction is the losses'
// string attribute ("mean", "sum", "none"). CPU only (in KnownCpuOnly): no
// sibling CUDA kernel. Half inputs compute in float32 (Note [Half compute]).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/margin_loss.h"
#include "runtime/core/status_macros.h"
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

cpu::LossReduction ReductionOf(const Attrs& attrs) {
  const std::string& r = attrs.String("reduction");
  if (r == "none") return cpu::LossReduction::kNone;
  return r == "sum" ? cpu::LossReduction::kSum : cpu::LossReduction::kMean;
}

// What both rows check: self a non-empty scalar, vector or [N, C] of a floating
// dtype; grad_output of self's dtype with N values (reduction "none") or
// one; a known reduction. Returns N.
absl::StatusOr<int64_t> CheckCommon(const Tensor& go, const Tensor& self,
                                    const Attrs& attrs, const char* op) {
  TD_RETURN_IF_ERROR(RequireFloating(self, op));
  TD_RETURN_IF_ERROR(CheckReduction(attrs.String("reduction")));
  if (self.ndim() > 2 || self.numel() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": expected a non-empty vector or matrix with optional 0-dim "
            "batch size, got ",
        ShapeToString(self.shape())));
  }
  const int64_t n = self.ndim() == 2 ? self.shape()[0] : 1;
  const int64_t want = attrs.String("reduction") == "none" ? n : 1;
  if (go.dtype() != self.dtype() || go.numel() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": expected grad_output of ", want, " ", DTypeName(self.dtype()),
        " values, got ", DTypeName(go.dtype()), ShapeToString(go.shape())));
  }
  return n;
}

Specs InferMulti(absl::Span<const Tensor> in, const Attrs& attrs,
                 const OpContext&) {
  const Tensor &self = in[1], &target = in[2];
  TD_ASSIGN_OR_RETURN(int64_t n, CheckCommon(in[0], self, attrs, kMulti));
  TD_RETURN_IF_ERROR(RequireInt64(target, kMulti));
  if (target.ndim() > 1 || target.numel() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(kMulti, ": inconsistent target size, expected ", n,
                     " but got ", ShapeToString(target.shape())));
  }
  const double p = attrs.Float("p");
  if (p != 1 && p != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(kMulti, ": only p == 1 and p == 2 supported, got ", p));
  }
  const int64_t c = self.ndim() == 0 ? 1 : self.shape().back();
  if (in.size() == 4 && (in[3].dtype() != self.dtype() ||
                         in[3].ndim() > 1 || in[3].numel() != c)) {
    return absl::InvalidArgumentError(absl::StrCat(
        kMulti, ": inconsistent weight size, expected ", c, " ",
        DTypeName(self.dtype()), " values but got ", DTypeName(in[3].dtype()),
        ShapeToString(in[3].shape())));
  }
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
  const Tensor &self = in[1], &target = in[2], &is_target = in[3];
  TD_RETURN_IF_ERROR(CheckCommon(in[0], self, attrs, kLabel).status());
  TD_RETURN_IF_ERROR(RequireInt64(target, kLabel));
  if (target.shape() != self.shape() || is_target.shape() != self.shape() ||
      is_target.dtype() != self.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kLabel, ": expected target (int64) and is_target (",
        DTypeName(self.dtype()), ") of input's size ",
        ShapeToString(self.shape()), ", got ", ShapeToString(target.shape()),
        " and ", DTypeName(is_target.dtype()),
        ShapeToString(is_target.shape())));
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

AttrSpec ReductionAttr() {
  return Optional("reduction", AttrType::kString, std::string("mean"));
}

}  // namespace

std::vector<OpDef> MarginLossOps() {
  const DType f = DType::kFloat32, i = DType::kInt64;
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
  multi.examples = {Example({{}, {3, 4}, {3}}, {}, {f, f, i}),
                    Example({{3}, {3, 4}, {3}, {4}},
                            {{"p", 2.0}, {"reduction", std::string("none")}},
                            {f, f, i, f})};
  OpDef label = MakeOp(
      kLabel, 4, 4, {ReductionAttr()},
      "(grad_output, self [N, C] or [C], target (self's size, int64 class "
      "indices up to the first -1), is_target) -> the gradient of "
      "multilabel_margin_loss w.r.t. self (used by autograd).");
  label.differentiable = false;
  label.infer = InferLabel;
  label.cpu = Label;
  label.examples = {Example({{}, {3, 4}, {3, 4}, {3, 4}}, {}, {f, f, i, f})};
  std::vector<OpDef> ops;
  ops.push_back(std::move(multi));
  ops.push_back(std::move(label));
  return ops;
}

}  // namespace tensord

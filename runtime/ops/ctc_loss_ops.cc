// _ctc_loss and _ctc_loss_backward (PyTorch's aten ops; kernels/cpu/
// ctc_loss.h) with the lengths as int64 tensors, as the schemas' Tensor
// overloads take them: (log_probs [T, N, C], targets [N, S'] or
// concatenated, input_lengths [N], target_lengths [N]) -> (neg_log_likelihood
// [N], log_alpha [N, T, 2 max_target_length + 1]). max_target_length is an
// attribute (Note [CTC log_alpha width]): shapes never wait for the lengths'
// values. The forward's gradient formula (derivatives.yaml's) is the
// backward row. CPU only (in KnownCpuOnly). Half inputs compute in float32
// (Note [Half compute]).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/ctc_loss.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/derivatives.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/index_checks.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
constexpr char kForward[] = "_ctc_loss";
constexpr char kBackward[] = "_ctc_loss_backward";

// The inputs both rows share: log_probs, targets, input_lengths,
// target_lengths (at `first`), and blank.
absl::Status CheckCtc(absl::Span<const Tensor> in, size_t first, int64_t blank,
                      const char* op) {
  const Tensor &lp = in[first], &targets = in[first + 1], &il = in[first + 2],
               &tl = in[first + 3];
  TD_RETURN_IF_ERROR(RequireFloating(lp, op));
  if (lp.ndim() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": expected log_probs [T, N, C], got ", ShapeToString(lp.shape())));
  }
  const int64_t n = lp.shape()[1], c = lp.shape()[2];
  TD_RETURN_IF_ERROR(RequireInt64(targets, op));
  TD_RETURN_IF_ERROR(RequireInt64(il, op));
  TD_RETURN_IF_ERROR(RequireInt64(tl, op));
  if (targets.ndim() < 1 || targets.ndim() > 2 ||
      (targets.ndim() == 2 && targets.shape()[0] != n) ||
      il.shape() != Shape{n} || tl.shape() != Shape{n}) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": expected targets [", n, ", S] or 1-d, input_lengths [", n,
        "] and target_lengths [", n, "], got ", ShapeToString(targets.shape()),
        ", ", ShapeToString(il.shape()), " and ", ShapeToString(tl.shape())));
  }
  if (blank < 0 || blank >= c) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": blank must be in label range [0, ", c, "), got ", blank));
  }
  return absl::OkStatus();
}

Specs InferForward(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  TD_RETURN_IF_ERROR(CheckCtc(in, 0, attrs.Int("blank"), kForward));
  const int64_t s = attrs.Int("max_target_length");
  if (s < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        kForward, ": max_target_length must not be negative, got ", s));
  }
  const Tensor& lp = in[0];
  const int64_t t = lp.shape()[0], n = lp.shape()[1];
  return std::vector<TensorSpec>{{lp.dtype(), {n}, lp.device()},
                                 {lp.dtype(), {n, t, 2 * s + 1}, lp.device()}};
}

absl::Status Forward(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::CtcLoss(c[0].view(), c[1].view(), c[2].view(), c[3].view(),
                      attrs.Int("blank"), out[0].view(), out[1].view());
}

// (grad [N], log_probs, targets, input_lengths, target_lengths,
//  neg_log_likelihood [N], log_alpha [N, T, 2 S + 1])
Specs InferBackward(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  TD_RETURN_IF_ERROR(CheckCtc(in, 1, attrs.Int("blank"), kBackward));
  const Tensor &g = in[0], &lp = in[1], &nll = in[5], &alpha = in[6];
  const int64_t t = lp.shape()[0], n = lp.shape()[1];
  const Shape& as = alpha.shape();
  if (g.dtype() != lp.dtype() || nll.dtype() != lp.dtype() ||
      alpha.dtype() != lp.dtype() || g.numel() != n || nll.numel() != n ||
      as.size() != 3 || as[0] != n || as[1] != t || as[2] % 2 != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        kBackward, ": expected grad and neg_log_likelihood [", n,
        "] and log_alpha [", n, ", ", t, ", 2 S + 1] of log_probs' dtype, got ",
        ShapeToString(g.shape()), ", ", ShapeToString(nll.shape()), " and ",
        DTypeName(alpha.dtype()), ShapeToString(as)));
  }
  return std::vector<TensorSpec>{{lp.dtype(), lp.shape(), lp.device()}};
}

absl::Status Backward(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::CtcLossBackward(c[0].view(), c[1].view(), c[2].view(),
                              c[3].view(), c[4].view(), c[5].view(),
                              c[6].view(), attrs.Int("blank"),
                              attrs.Bool("zero_infinity"), out[0].view());
}

Grads ForwardGrad(GradCtx& g) {
  Grads r(g.num_inputs());
  if (g.needs(0)) {
    r[0] =
        g.Op(kBackward,
             {g.grad(), g.in(0), g.in(1), g.in(2), g.in(3), g.out(0), g.out(1)},
             {{"blank", g.attrs().Int("blank")},
              {"zero_infinity", g.attrs().Bool("zero_infinity")}});
  }
  return r;
}

std::vector<AttrSpec> CommonAttrs() {
  return {Optional("blank", AttrType::kInt, int64_t{0}),
          Optional("zero_infinity", AttrType::kBool, false)};
}

}  // namespace

std::vector<GradRow> CtcLossGrads() {
  return {{kForward, {0, 1, 2, 3}, {0, 1}, ForwardGrad}};
}

std::vector<OpDef> CtcLossOps() {
  const DType f = DType::kFloat32, i = DType::kInt64;
  std::vector<AttrSpec> fattrs = CommonAttrs();
  fattrs.push_back(Required("max_target_length", AttrType::kInt));
  OpDef fwd = MakeOp(
      kForward, 4, 4, std::move(fattrs),
      "The CTC loss of each batch entry (aten._ctc_loss): (log_probs [T, N, "
      "C], targets [N, S'] or concatenated, input_lengths [N], "
      "target_lengths [N] (int64)) -> (neg_log_likelihood [N], log_alpha "
      "[N, T, 2 max_target_length + 1]); zero_infinity is for the backward.");
  fwd.num_outputs = 2;
  fwd.infer = InferForward;
  fwd.cpu = Forward;
  fwd.examples = {
      Example({{5, 2, 4}, {2, 3}, {2}, {2}},
              {{"max_target_length", int64_t{3}}}, {f, i, i, i}),
      Example({{5, 2, 4}, {6}, {2}, {2}},
              {{"max_target_length", int64_t{0}}, {"blank", int64_t{3}}},
              {f, i, i, i})};
  OpDef bwd = MakeOp(
      kBackward, 7, 7, CommonAttrs(),
      "(grad [N], log_probs, targets, input_lengths, target_lengths, "
      "neg_log_likelihood, log_alpha) -> the gradient of _ctc_loss w.r.t. "
      "log_probs (used by autograd); zero_infinity zeroes it where the loss "
      "is infinite.");
  bwd.differentiable = false;
  bwd.infer = InferBackward;
  bwd.cpu = Backward;
  bwd.examples = {Example({{2}, {5, 2, 4}, {2, 3}, {2}, {2}, {2}, {2, 5, 7}},
                          {}, {f, f, i, i, i, f, f})};
  std::vector<OpDef> ops;
  ops.push_back(std::move(fwd));
  ops.push_back(std::move(bwd));
  return ops;
}

}  // namespace tensord

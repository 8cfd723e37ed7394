// nll_loss and cross_entropy, written in terms of other rows (composites):
// class-index targets on the CPU call the fused_cross_entropy row
// (cross_entropy_ops.cc); probability targets, label smoothing, other
// devices and dtypes compose log_softmax, gathers and reductions. NnOps
// lists these rows (after mse_loss).
#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/device.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/loss_reduction.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Outs = absl::StatusOr<std::vector<Tensor>>;
using I = std::vector<int64_t>;
using Ops = ComposeOps;

// Moves the class dim (1) last and flattens: [M, C] rows, target [M].
absl::Status FlattenClasses(const Ops& op, Tensor* x, Tensor* target) {
  if (x->ndim() == 1) {
    TD_ASSIGN_OR_RETURN(*x, op("unsqueeze", {*x}, {{"dim", int64_t{0}}}));
    TD_ASSIGN_OR_RETURN(*target, op("reshape", {*target}, {{"shape", I{-1}}}));
    return absl::OkStatus();
  }
  if (x->ndim() > 2) {
    I perm{0};
    for (int d = 2; d < x->ndim(); ++d) perm.push_back(d);
    perm.push_back(1);
    TD_ASSIGN_OR_RETURN(*x, op("permute", {*x}, {{"dims", perm}}));
    TD_ASSIGN_OR_RETURN(
        *x, op("reshape", {*x}, {{"shape", I{-1, x->shape().back()}}}));
    TD_ASSIGN_OR_RETURN(*target, op("reshape", {*target}, {{"shape", I{-1}}}));
  }
  return absl::OkStatus();
}

absl::Status CheckTarget(const Tensor& x, const Tensor& target) {
  if (target.dtype() != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected target of dtype int64 (class indices), got ",
                     DTypeName(target.dtype())));
  }
  Shape want = x.shape();
  if (!want.empty()) want.erase(want.begin() + (x.ndim() == 1 ? 0 : 1));
  if (x.ndim() == 0 || target.shape() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected target of shape ", ShapeToString(want), " for input ",
        ShapeToString(x.shape()), ", got ", ShapeToString(target.shape())));
  }
  return absl::OkStatus();
}

// nll on log-probabilities `logp` [M, C] and target [M]: (loss per row
// [M] with ignored rows 0, the per-row weights).
absl::StatusOr<std::pair<Tensor, Tensor>> NllRows(const Ops& op,
                                                  const Tensor& logp,
                                                  const Tensor& target,
                                                  const Tensor* weight,
                                                  int64_t ignore) {
  TD_ASSIGN_OR_RETURN(Tensor ig, op.Num(static_cast<double>(ignore), target));
  TD_ASSIGN_OR_RETURN(Tensor valid, op("ne", {target, ig}));
  TD_ASSIGN_OR_RETURN(Tensor zero, op.Num(0, target));
  TD_ASSIGN_OR_RETURN(Tensor safe, op("where", {valid, target, zero}));
  TD_ASSIGN_OR_RETURN(Tensor col,
                      op("unsqueeze", {safe}, {{"dim", int64_t{1}}}));
  TD_ASSIGN_OR_RETURN(Tensor picked,
                      op("gather", {logp, col}, {{"dim", int64_t{1}}}));
  TD_ASSIGN_OR_RETURN(picked, op("reshape", {picked}, {{"shape", I{-1}}}));
  TD_ASSIGN_OR_RETURN(Tensor w, op("to", {valid}, {{"dtype", logp.dtype()}}));
  if (weight != nullptr) {
    TD_ASSIGN_OR_RETURN(
        Tensor wc, op("index_select", {*weight, safe}, {{"dim", int64_t{0}}}));
    TD_ASSIGN_OR_RETURN(w, op("mul", {w, wc}));
  }
  TD_ASSIGN_OR_RETURN(Tensor loss, op("mul", {picked, w}));
  TD_ASSIGN_OR_RETURN(loss, op("neg", {loss}));
  return std::make_pair(loss, w);
}

// Reduces per-row losses; "mean" divides by the total weight (PyTorch).
absl::StatusOr<Tensor> ReduceRows(const Ops& op, const Tensor& loss,
                                  const Tensor& w, const std::string& r,
                                  const Shape& target_shape) {
  if (r == "none") {
    return op("reshape", {loss},
              {{"shape", I(target_shape.begin(), target_shape.end())}});
  }
  TD_ASSIGN_OR_RETURN(Tensor total, op("sum", {loss}));
  if (r == "sum") return total;
  TD_ASSIGN_OR_RETURN(Tensor wsum, op("sum", {w}));
  return op("div", {total, wsum});
}

absl::Status CheckWeight(const Tensor* weight, const Tensor& x) {
  // A 0-dim input is one class (cross_entropy with probability targets).
  const int64_t c = x.ndim() == 0   ? 1
                    : x.ndim() == 1 ? x.shape()[0]
                                    : x.shape()[1];
  if (weight != nullptr && (weight->ndim() != 1 || weight->shape()[0] != c)) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight tensor should be defined either for all ", c,
                     " classes or no classes but got weight tensor of shape: ",
                     ShapeToString(weight->shape())));
  }
  return absl::OkStatus();
}

// The class weights have no derivative (PyTorch refuses them requiring grad
// in grad mode: "not differentiable with respect to argument 'weight'").
absl::Status CheckWeightGrad(const Tensor* weight, const OpContext& ctx,
                             const char* op) {
  if (weight == nullptr || ctx.recorder == nullptr ||
      !weight->requires_grad()) {
    return absl::OkStatus();
  }
  return NotDifferentiable(op, "weight", 2);
}

// Class-index targets with the input's dtype throughout: the
// fused_cross_entropy row, one kernel each way (cross_entropy_ops.cc).
bool Fusable(absl::Span<const Tensor> in) {
  return in.size() < 3 || in[2].dtype() == in[0].dtype();
}

absl::StatusOr<Tensor> FusedLoss(absl::Span<const Tensor> in,
                                 const Attrs& attrs, double smoothing,
                                 bool log_probs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(
      std::vector<Tensor> outs,
      CallOp("fused_cross_entropy", std::vector<Tensor>(in.begin(), in.end()),
             {{"reduction", attrs.String("reduction")},
              {"ignore_index", attrs.Int("ignore_index")},
              {"label_smoothing", smoothing},
              {"log_probs", log_probs}},
             ctx));
  return outs[0];
}

Outs NllLoss(absl::Span<const Tensor> in, const Attrs& attrs,
             const OpContext& ctx) {
  const std::string& r = attrs.String("reduction");
  TD_RETURN_IF_ERROR(CheckReduction(r));
  TD_RETURN_IF_ERROR(RequireFloating(in[0], "nll_loss"));
  TD_RETURN_IF_ERROR(CheckTarget(in[0], in[1]));
  const Tensor* weight = in.size() == 3 ? &in[2] : nullptr;
  TD_RETURN_IF_ERROR(CheckWeight(weight, in[0]));
  TD_RETURN_IF_ERROR(CheckWeightGrad(weight, ctx, "nll_loss"));
  if (Fusable(in)) {
    TD_ASSIGN_OR_RETURN(Tensor out, FusedLoss(in, attrs, 0, true, ctx));
    return std::vector<Tensor>{out};
  }
  Ops op{ctx};
  Tensor x = in[0], target = in[1];
  TD_RETURN_IF_ERROR(FlattenClasses(op, &x, &target));
  TD_ASSIGN_OR_RETURN(
      auto lw, NllRows(op, x, target, weight, attrs.Int("ignore_index")));
  TD_ASSIGN_OR_RETURN(Tensor out,
                      ReduceRows(op, lw.first, lw.second, r, in[1].shape()));
  return std::vector<Tensor>{out};
}

// cross_entropy = nll_loss(log_softmax(input, class dim)), with label
// smoothing mixing in the mean of -logp over classes; float targets are
// class probabilities. Class-index targets on the CPU take the fused
// fused_cross_entropy row instead.
Outs CrossEntropy(absl::Span<const Tensor> in, const Attrs& attrs,
                  const OpContext& ctx) {
  const std::string& r = attrs.String("reduction");
  TD_RETURN_IF_ERROR(CheckReduction(r));
  TD_RETURN_IF_ERROR(RequireFloating(in[0], "cross_entropy"));
  const double eps = attrs.Float("label_smoothing");
  if (eps < 0 || eps > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "label_smoothing must be between 0.0 and 1.0. Got: ", eps));
  }
  const Tensor* weight = in.size() == 3 ? &in[2] : nullptr;
  TD_RETURN_IF_ERROR(CheckWeight(weight, in[0]));
  TD_RETURN_IF_ERROR(CheckWeightGrad(weight, ctx, "cross_entropy"));
  Ops op{ctx};
  const int64_t cdim = in[0].ndim() == 1 ? 0 : 1;
  const int64_t classes = in[0].ndim() == 0 ? 1 : in[0].shape()[cdim];
  if (IsFloating(in[1].dtype())) {  // probabilities
    if (in[1].shape() != in[0].shape() || weight != nullptr) {
      return absl::InvalidArgumentError(
          "cross_entropy with probability targets needs target of input's "
          "shape "
          "(and no weight here)");
    }
    TD_ASSIGN_OR_RETURN(Tensor logp,
                        op("log_softmax", {in[0]}, {{"dim", cdim}}));
    Tensor t = in[1];
    if (eps > 0) {
      TD_ASSIGN_OR_RETURN(Tensor a, op.Num(1 - eps, t));
      TD_ASSIGN_OR_RETURN(Tensor b, op.Num(eps / classes, t));
      TD_ASSIGN_OR_RETURN(t, op("mul", {t, a}));
      TD_ASSIGN_OR_RETURN(t, op("add", {t, b}));
    }
    TD_ASSIGN_OR_RETURN(Tensor prod, op("mul", {logp, t}));
    TD_ASSIGN_OR_RETURN(Tensor rows, op("sum", {prod}, {{"dim", I{cdim}}}));
    TD_ASSIGN_OR_RETURN(rows, op("neg", {rows}));
    if (r == "mean" && in[0].ndim() > 1) {
      TD_ASSIGN_OR_RETURN(Tensor s, op("sum", {rows}));
      TD_ASSIGN_OR_RETURN(
          Tensor n, op.Num(static_cast<double>(in[0].numel() / classes), s));
      TD_ASSIGN_OR_RETURN(s, op("div", {s, n}));
      return std::vector<Tensor>{s};
    }
    TD_ASSIGN_OR_RETURN(Tensor out, Reduce(op, rows, r == "mean" ? "sum" : r));
    return std::vector<Tensor>{out};
  }
  TD_RETURN_IF_ERROR(CheckTarget(in[0], in[1]));
  if (Fusable(in)) {
    TD_ASSIGN_OR_RETURN(Tensor out, FusedLoss(in, attrs, eps, false, ctx));
    return std::vector<Tensor>{out};
  }
  TD_ASSIGN_OR_RETURN(Tensor logp, op("log_softmax", {in[0]}, {{"dim", cdim}}));
  Tensor target = in[1];
  TD_RETURN_IF_ERROR(FlattenClasses(op, &logp, &target));
  TD_ASSIGN_OR_RETURN(
      auto lw, NllRows(op, logp, target, weight, attrs.Int("ignore_index")));
  TD_ASSIGN_OR_RETURN(Tensor out,
                      ReduceRows(op, lw.first, lw.second, r, in[1].shape()));
  if (eps == 0) return std::vector<Tensor>{out};
  // smooth_i = -sum_c logp_ic * w_c, zero on ignored rows.
  Tensor lp = logp;
  if (weight != nullptr) {
    TD_ASSIGN_OR_RETURN(lp, op("mul", {logp, *weight}));
  }
  TD_ASSIGN_OR_RETURN(Tensor smooth, op("sum", {lp}, {{"dim", I{1}}}));
  TD_ASSIGN_OR_RETURN(smooth, op("neg", {smooth}));
  TD_ASSIGN_OR_RETURN(
      Tensor ig,
      op.Num(static_cast<double>(attrs.Int("ignore_index")), target));
  TD_ASSIGN_OR_RETURN(Tensor valid, op("ne", {target, ig}));
  TD_ASSIGN_OR_RETURN(Tensor zero, op.Num(0, smooth));
  TD_ASSIGN_OR_RETURN(smooth, op("where", {valid, smooth, zero}));
  TD_ASSIGN_OR_RETURN(Tensor sm,
                      ReduceRows(op, smooth, lw.second, r, in[1].shape()));
  TD_ASSIGN_OR_RETURN(Tensor a, op.Num(1 - eps, out));
  TD_ASSIGN_OR_RETURN(Tensor b, op.Num(eps / classes, out));
  TD_ASSIGN_OR_RETURN(out, op("mul", {out, a}));
  TD_ASSIGN_OR_RETURN(sm, op("mul", {sm, b}));
  TD_ASSIGN_OR_RETURN(out, op("add", {out, sm}));
  return std::vector<Tensor>{out};
}

}  // namespace

std::vector<OpDef> NllLossOps(const AttrSpec& reduction) {
  std::vector<OpDef> ops;
  const AttrSpec ignore =
      Optional("ignore_index", AttrType::kInt, int64_t{-100});
  OpDef nll = MakeOp("nll_loss", 2, 3, {reduction, ignore},
                     "Negative log likelihood of class targets (int64) given "
                     "log-probabilities [N, C, ...]; optional class weights.");
  nll.composite = NllLoss;
  nll.examples = {
      Example({{4, 3}, {4}}, {}, {DType::kFloat32, DType::kInt64}),
      Example({{4, 3}, {4}, {3}}, {{"reduction", std::string("none")}},
              {DType::kFloat32, DType::kInt64, DType::kFloat32})};
  ops.push_back(std::move(nll));
  OpDef ce = MakeOp(
      "cross_entropy", 2, 3,
      {reduction, ignore, Optional("label_smoothing", AttrType::kFloat, 0.0)},
      "nll_loss(log_softmax(input, 1), target); class-index or "
      "probability targets, label smoothing, class weights.");
  ce.composite = CrossEntropy;
  ce.examples = {Example({{4, 3}, {4}}, {{"label_smoothing", 0.1}},
                         {DType::kFloat32, DType::kInt64}),
                 Example({{4, 3}, {4, 3}})};
  ops.push_back(std::move(ce));
  return ops;
}

}  // namespace tensord

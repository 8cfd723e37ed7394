// The elementwise losses beyond mse_loss: binary_cross_entropy (+ with
// logits), smooth_l1_loss and huber_loss, with PyTorch's formulas and
// reductions. Composites: they validate, then call rows, and are
// differentiated through the rows they call (Note [Autograd recording]), so
// they run on every device whose rows they use.
#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Outs = absl::StatusOr<std::vector<Tensor>>;

using Ops = ComposeOps;

// The loss of each element reduced as `reduction` says ("none", "mean",
// "sum"; checked by CheckLoss).
Outs Reduced(const Ops& op, const Tensor& loss, const Attrs& attrs) {
  const std::string& r = attrs.String("reduction");
  if (r == "none") return std::vector<Tensor>{loss};
  TD_ASSIGN_OR_RETURN(Tensor out, op(r, {loss}));
  return std::vector<Tensor>{out};
}

// PyTorch's checks shared by these losses: a known reduction, floating
// input, and a target of the input's shape (PyTorch warns and broadcasts
// for smooth_l1/huber; binary_cross_entropy refuses: tensord refuses both,
// as broadcasting there is almost always a bug).
absl::Status CheckLoss(absl::Span<const Tensor> in, const Attrs& attrs,
                       const char* what) {
  const std::string& r = attrs.String("reduction");
  if (r != "none" && r != "mean" && r != "sum") {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "(): ", r,
                     " is not a valid value for reduction (none, mean, sum)"));
  }
  TD_RETURN_IF_ERROR(RequireFloating(in[0], absl::StrCat(what, "() input")));
  if (in[0].shape() != in[1].shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "(): target size ", ShapeToString(in[1].shape()),
                     " differs from input size ", ShapeToString(in[0].shape()),
                     " (make them equal, e.g. target.view_as(input))"));
  }
  return absl::OkStatus();
}

// -w * (t * max(log x, -100) + (1 - t) * max(log(1 - x), -100)); inputs
// (input, target[, weight]). Values of x outside [0, 1] give NaN (PyTorch
// raises; checking would read the data).
Outs BinaryCrossEntropy(absl::Span<const Tensor> in, const Attrs& attrs,
                        const OpContext& ctx) {
  TD_RETURN_IF_ERROR(CheckLoss(in, attrs, "binary_cross_entropy"));
  Ops op{ctx};
  const Tensor &x = in[0], &t = in[1];
  std::map<std::string, AttrValue> floor = {{"min", -100.0}};
  TD_ASSIGN_OR_RETURN(Tensor one, op.Num(1, x));
  TD_ASSIGN_OR_RETURN(Tensor log_x, op("log", {x}));
  TD_ASSIGN_OR_RETURN(log_x, op("clamp", {log_x}, floor));
  TD_ASSIGN_OR_RETURN(Tensor log_1mx, op("sub", {one, x}));
  TD_ASSIGN_OR_RETURN(log_1mx, op("log", {log_1mx}));
  TD_ASSIGN_OR_RETURN(log_1mx, op("clamp", {log_1mx}, floor));
  // t * log x + (1 - t) * log(1 - x) = log(1 - x) + t * (log x - log(1 - x))
  TD_ASSIGN_OR_RETURN(Tensor d, op("sub", {log_x, log_1mx}));
  TD_ASSIGN_OR_RETURN(d, op("mul", {t, d}));
  TD_ASSIGN_OR_RETURN(Tensor loss, op("add", {log_1mx, d}));
  TD_ASSIGN_OR_RETURN(loss, op("neg", {loss}));
  if (in.size() == 3) {
    TD_ASSIGN_OR_RETURN(loss, op("mul", {loss, in[2]}));
  }
  return Reduced(op, loss, attrs);
}

// PyTorch's stable form: with m = max(-x, 0) and lw = 1 + (pos_weight - 1) t,
// (1 - t) x + lw (m + log(exp(-m) + exp(-x - m))); inputs (input, target[,
// weight][, pos_weight]) with has_pos_weight saying whether the last is
// pos_weight. Its gradient is exact at x = 0 (clamp passes it at the bound).
Outs BceWithLogits(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext& ctx) {
  TD_RETURN_IF_ERROR(CheckLoss(in, attrs, "binary_cross_entropy_with_logits"));
  const bool has_pos = attrs.Bool("has_pos_weight");
  if (has_pos && in.size() < 3) {
    return absl::InvalidArgumentError(
        "binary_cross_entropy_with_logits(): has_pos_weight needs a "
        "pos_weight input after target (and weight)");
  }
  Ops op{ctx};
  const Tensor &x = in[0], &t = in[1];
  TD_ASSIGN_OR_RETURN(Tensor one, op.Num(1, x));
  TD_ASSIGN_OR_RETURN(Tensor neg_x, op("neg", {x}));
  TD_ASSIGN_OR_RETURN(Tensor m, op("clamp", {neg_x}, {{"min", 0.0}}));
  TD_ASSIGN_OR_RETURN(Tensor neg_m, op("neg", {m}));
  TD_ASSIGN_OR_RETURN(Tensor a, op("exp", {neg_m}));
  TD_ASSIGN_OR_RETURN(Tensor b, op("sub", {neg_x, m}));
  TD_ASSIGN_OR_RETURN(b, op("exp", {b}));
  TD_ASSIGN_OR_RETURN(Tensor soft, op("add", {a, b}));
  TD_ASSIGN_OR_RETURN(soft, op("log", {soft}));
  TD_ASSIGN_OR_RETURN(soft, op("add", {soft, m}));
  if (has_pos) {
    TD_ASSIGN_OR_RETURN(Tensor lw, op("sub", {in.back(), one}));
    TD_ASSIGN_OR_RETURN(lw, op("mul", {lw, t}));
    TD_ASSIGN_OR_RETURN(lw, op("add", {lw, one}));
    TD_ASSIGN_OR_RETURN(soft, op("mul", {soft, lw}));
  }
  TD_ASSIGN_OR_RETURN(Tensor lin, op("sub", {one, t}));
  TD_ASSIGN_OR_RETURN(lin, op("mul", {lin, x}));
  TD_ASSIGN_OR_RETURN(Tensor loss, op("add", {lin, soft}));
  const size_t weights = in.size() - (has_pos ? 1 : 0);
  if (weights == 3) {
    TD_ASSIGN_OR_RETURN(loss, op("mul", {loss, in[2]}));
  }
  return Reduced(op, loss, attrs);
}

// smooth_l1 (huber = false): |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta,
// plain |d| when beta is 0. huber: |d| < delta ? 0.5 d^2
// : delta (|d| - 0.5 delta).
template <bool kHuber>
Outs SmoothL1(absl::Span<const Tensor> in, const Attrs& attrs,
              const OpContext& ctx) {
  const char* what = kHuber ? "huber_loss" : "smooth_l1_loss";
  TD_RETURN_IF_ERROR(CheckLoss(in, attrs, what));
  const double beta = attrs.Float(kHuber ? "delta" : "beta");
  if (kHuber ? beta <= 0 : beta < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "(): ", kHuber ? "delta" : "beta", " must be ",
                     kHuber ? "positive" : "non-negative", ", got ", beta));
  }
  Ops op{ctx};
  TD_ASSIGN_OR_RETURN(Tensor d, op("sub", {in[0], in[1]}));
  TD_ASSIGN_OR_RETURN(Tensor z, op("abs", {d}));
  if (beta == 0) return Reduced(op, z, attrs);  // (0.5 d^2 / 0: never taken)
  TD_ASSIGN_OR_RETURN(Tensor b, op.Num(beta, z));
  TD_ASSIGN_OR_RETURN(Tensor near, op("lt", {z, b}));
  TD_ASSIGN_OR_RETURN(Tensor sq, op("mul", {d, d}));
  TD_ASSIGN_OR_RETURN(Tensor k, op.Num(kHuber ? 0.5 : 0.5 / beta, z));
  TD_ASSIGN_OR_RETURN(sq, op("mul", {sq, k}));
  TD_ASSIGN_OR_RETURN(Tensor half, op.Num(0.5 * beta, z));
  TD_ASSIGN_OR_RETURN(Tensor lin, op("sub", {z, half}));
  if (kHuber) {
    TD_ASSIGN_OR_RETURN(lin, op("mul", {lin, b}));
  }
  TD_ASSIGN_OR_RETURN(Tensor loss, op("where", {near, sq, lin}));
  return Reduced(op, loss, attrs);
}

AttrSpec Reduction() {
  return Optional("reduction", AttrType::kString, std::string("mean"));
}

}  // namespace

std::vector<OpDef> LossOps() {
  std::vector<OpDef> ops;
  OpDef bce = MakeOp("binary_cross_entropy", 2, 3, {Reduction()},
                     "-w (t log x + (1 - t) log(1 - x)) of probabilities x "
                     "and targets t (logs floored at -100); inputs (input, "
                     "target[, weight]).");
  bce.composite = BinaryCrossEntropy;
  bce.examples = {Example({{2, 3}, {2, 3}}), Example({{4}, {4}, {4}})};
  bce.examples[0].positive = bce.examples[1].positive = true;  // |normal|
  ops.push_back(std::move(bce));
  OpDef bcel = MakeOp(
      "binary_cross_entropy_with_logits", 2, 4,
      {Reduction(), Optional("has_pos_weight", AttrType::kBool, false)},
      "binary_cross_entropy(sigmoid(input), target) computed stably; inputs "
      "(input, target[, weight][, pos_weight]): the last is pos_weight when "
      "has_pos_weight.");
  bcel.composite = BceWithLogits;
  bcel.examples = {
      Example({{2, 3}, {2, 3}}),
      Example({{2, 3}, {2, 3}, {3}, {3}},
              {{"has_pos_weight", true}, {"reduction", std::string("sum")}})};
  ops.push_back(std::move(bcel));
  OpDef sl1 = MakeOp("smooth_l1_loss", 2, 2,
                     {Reduction(), Optional("beta", AttrType::kFloat, 1.0)},
                     "0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, "
                     "for d = input - target.");
  sl1.composite = SmoothL1<false>;
  sl1.examples = {Example({{2, 3}, {2, 3}}, {{"beta", 0.5}})};
  ops.push_back(std::move(sl1));
  OpDef huber = MakeOp("huber_loss", 2, 2,
                       {Reduction(), Optional("delta", AttrType::kFloat, 1.0)},
                       "0.5 d^2 where |d| < delta, else delta (|d| - 0.5 "
                       "delta), for d = input - target.");
  huber.composite = SmoothL1<true>;
  huber.examples = {Example({{2, 3}, {2, 3}}, {{"delta", 0.5}})};
  ops.push_back(std::move(huber));
  return ops;
}

}  // namespace tensord

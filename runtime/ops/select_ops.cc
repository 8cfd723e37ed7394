// Ops that pick each element from one of two values by a position or a
// comparison: tril/triu (by row and column), clamp_min/clamp_max with tensor
// bounds, leaky_relu. Composites over where: they run on every device whose
// rows they call, and are differentiated through where, which gives
// PyTorch's gradients (the kept side gets the gradient, ties go to input).
#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Outs = absl::StatusOr<std::vector<Tensor>>;
using I = std::vector<int64_t>;

// tril (kLower) keeps the elements with column - row <= diagonal of the
// last two dims; triu those with column - row >= diagonal.
template <bool kLower>
Outs Triangle(absl::Span<const Tensor> in, const Attrs& attrs,
              const OpContext& ctx) {
  const Tensor& x = in[0];
  const char* what = kLower ? "tril" : "triu";
  if (x.ndim() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(what,
                     "(): input tensor must have at least 2 dimensions, "
                     "got shape ",
                     ShapeToString(x.shape())));
  }
  OpContext here = ctx;  // the index tensors on x's device
  here.device = x.device();
  const int64_t h = x.shape()[x.ndim() - 2], w = x.shape().back();
  TD_ASSIGN_OR_RETURN(
      Tensor rows,
      Call1("arange", {}, {{"end", static_cast<double>(h)}}, here));
  TD_ASSIGN_OR_RETURN(rows, Call1("view", {rows}, {{"shape", I{h, 1}}}, here));
  TD_ASSIGN_OR_RETURN(
      Tensor cols,
      Call1("arange", {}, {{"end", static_cast<double>(w)}}, here));
  TD_ASSIGN_OR_RETURN(Tensor diff, Call1("sub", {cols, rows}, {}, here));
  TD_ASSIGN_OR_RETURN(Tensor diagonal,
                      Scalar(static_cast<double>(attrs.Int("diagonal")),
                             DType::kInt64, x.device(), ctx));
  TD_ASSIGN_OR_RETURN(Tensor keep,
                      Call1(kLower ? "le" : "ge", {diff, diagonal}, {}, here));
  TD_ASSIGN_OR_RETURN(Tensor zero, Scalar(0, x.dtype(), x.device(), ctx));
  TD_ASSIGN_OR_RETURN(Tensor out, Call1("where", {keep, x, zero}, {}, ctx));
  return std::vector<Tensor>{out};
}

// clamp_min(input, min) / clamp_max(input, max) with tensor bounds
// (broadcast, promoted together); a NaN bound gives NaN, as in PyTorch. Bool
// operands too, as PyTorch's maximum/minimum: clamp_min of bools is or,
// clamp_max and.
template <bool kMin>
Outs ClampBound(absl::Span<const Tensor> in, const Attrs&,
                const OpContext& ctx) {
  const Tensor &x = in[0], &bound = in[1];
  TD_ASSIGN_OR_RETURN(Tensor past,
                      Call1(kMin ? "lt" : "gt", {x, bound}, {}, ctx));
  if (IsFloating(bound.dtype())) {
    TD_ASSIGN_OR_RETURN(Tensor nan, Call1("ne", {bound, bound}, {}, ctx));
    TD_ASSIGN_OR_RETURN(past, Call1("logical_or", {past, nan}, {}, ctx));
  }
  TD_ASSIGN_OR_RETURN(Tensor out, Call1("where", {past, bound, x}, {}, ctx));
  return std::vector<Tensor>{out};
}

// leaky_relu: input where input > 0, else input * negative_slope.
Outs LeakyRelu(absl::Span<const Tensor> in, const Attrs& attrs,
               const OpContext& ctx) {
  const Tensor& x = in[0];
  TD_RETURN_IF_ERROR(RequireFloating(x, "leaky_relu() input"));
  TD_ASSIGN_OR_RETURN(Tensor zero, Scalar(0, x.dtype(), x.device(), ctx));
  TD_ASSIGN_OR_RETURN(Tensor slope, Scalar(attrs.Float("negative_slope"),
                                           x.dtype(), x.device(), ctx));
  TD_ASSIGN_OR_RETURN(Tensor pos, Call1("gt", {x, zero}, {}, ctx));
  TD_ASSIGN_OR_RETURN(Tensor neg, Call1("mul", {x, slope}, {}, ctx));
  TD_ASSIGN_OR_RETURN(Tensor out, Call1("where", {pos, x, neg}, {}, ctx));
  return std::vector<Tensor>{out};
}

}  // namespace

std::vector<OpDef> SelectOps() {
  std::vector<OpDef> ops;
  for (bool lower : {true, false}) {
    OpDef def = MakeOp(
        lower ? "tril" : "triu", 1, 1,
        {Optional("diagonal", AttrType::kInt, int64_t{0})},
        lower ? "input with the elements above the diagonal-th diagonal of "
                "the last two dims zeroed."
              : "input with the elements below the diagonal-th diagonal of "
                "the last two dims zeroed.");
    def.composite = lower ? Triangle<true> : Triangle<false>;
    def.examples = {Example({{3, 4}}),
                    Example({{2, 3, 5}}, {{"diagonal", int64_t{-1}}})};
    ops.push_back(std::move(def));
  }
  for (bool min : {true, false}) {
    OpDef def = MakeOp(min ? "clamp_min" : "clamp_max", 2, 2, {},
                       min ? "max(input, min) with a tensor min (broadcast; "
                             "bool: or)."
                           : "min(input, max) with a tensor max (broadcast; "
                             "bool: and).");
    def.composite = min ? ClampBound<true> : ClampBound<false>;
    def.examples = {Example({{2, 3}, {3}}),
                    Example({{2, 3}, {3}}, {}, {DType::kBool, DType::kBool})};
    ops.push_back(std::move(def));
  }
  OpDef leaky = MakeOp("leaky_relu", 1, 1,
                       {Optional("negative_slope", AttrType::kFloat, 0.01)},
                       "input where input > 0, else input * negative_slope.");
  leaky.composite = LeakyRelu;
  leaky.examples = {Example({{2, 3}}, {{"negative_slope", 0.2}})};
  ops.push_back(std::move(leaky));
  return ops;
}

}  // namespace tensord

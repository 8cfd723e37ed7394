// Comparisons and logical ops (bool results, broadcasting; operands compared
// in their promoted type) and where / masked_fill.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;

Specs InferCompare(absl::Span<const Tensor> in, const Attrs&,
                   const OpContext&) {
  TD_ASSIGN_OR_RETURN(Shape shape,
                      BroadcastShapes(in[0].shape(), in[1].shape()));
  return std::vector<TensorSpec>{
      {DType::kBool, std::move(shape), in[0].device()}};
}

template <cpu::CompareOp kOp>
absl::Status CpuCompare(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs&,
                        const OpContext& ctx) {
  const DType common = ResultType(in);
  TD_ASSIGN_OR_RETURN(Tensor a, CastTo(in[0], common, ctx));
  TD_ASSIGN_OR_RETURN(Tensor b, CastTo(in[1], common, ctx));
  const Shape& shape = out[0].shape();
  return cpu::Compare(kOp, a.BroadcastView(shape), b.BroadcastView(shape),
                      out[0].view());
}

Specs InferWhere(absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  if (in[0].dtype() != DType::kBool) {
    return absl::InvalidArgumentError(absl::StrCat(
        "where expected condition to be a boolean tensor, but got a tensor "
        "with dtype ",
        DTypeName(in[0].dtype())));
  }
  TD_ASSIGN_OR_RETURN(Shape s, BroadcastShapes(in[0].shape(), in[1].shape()));
  TD_ASSIGN_OR_RETURN(s, BroadcastShapes(s, in[2].shape()));
  return std::vector<TensorSpec>{
      {ResultType(in.subspan(1)), s, in[0].device()}};
}

absl::Status CpuWhere(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs&, const OpContext& ctx) {
  const DType d = out[0].dtype();
  TD_ASSIGN_OR_RETURN(Tensor a, CastTo(in[1], d, ctx));
  TD_ASSIGN_OR_RETURN(Tensor b, CastTo(in[2], d, ctx));
  const Shape& s = out[0].shape();
  return cpu::Where(in[0].BroadcastView(s), a.BroadcastView(s),
                    b.BroadcastView(s), out[0].view());
}

// masked_fill(input, mask, value): value is a 0-d tensor (a Python scalar)
// converted to input's dtype; mask broadcasts to input's shape.
Specs InferMaskedFill(absl::Span<const Tensor> in, const Attrs&,
                      const OpContext&) {
  if (in[1].dtype() != DType::kBool) {
    return absl::InvalidArgumentError(absl::StrCat(
        "masked_fill only supports boolean masks, but got mask with dtype ",
        DTypeName(in[1].dtype())));
  }
  if (in[2].ndim() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("masked_fill only supports a 0-dimensional value tensor, "
                     "but got tensor "
                     "with ",
                     in[2].ndim(), " dimension(s)."));
  }
  TD_ASSIGN_OR_RETURN(Shape s, BroadcastShapes(in[0].shape(), in[1].shape()));
  if (s != in[0].shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "masked_fill: mask of shape ", ShapeToString(in[1].shape()),
        " does not broadcast to input shape ", ShapeToString(in[0].shape())));
  }
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[0].shape(), in[0].device()}};
}

absl::Status CpuMaskedFill(absl::Span<const Tensor> in,
                           absl::Span<const Tensor> out, const Attrs&,
                           const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor v, CastTo(in[2], out[0].dtype(), ctx));
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  const Shape& s = out[0].shape();
  return cpu::Where(in[1].BroadcastView(s), v.BroadcastView(s), x.view(),
                    out[0].view());
}

OpDef CompareRow(std::string name, KernelFn fn, std::string doc) {
  OpDef def = MakeOp(std::move(name), 2, 2, {}, std::move(doc));
  def.infer = InferCompare;
  def.cpu = fn;
  def.differentiable = false;
  def.examples = {Example({{2, 3}, {3}}), Example({{2, 3}, {}})};
  return def;
}

}  // namespace

std::vector<OpDef> CompareOps() {
  using C = cpu::CompareOp;
  std::vector<OpDef> ops;
  ops.push_back(CompareRow("eq", CpuCompare<C::kEq>, "input == other (bool)."));
  ops.push_back(CompareRow("ne", CpuCompare<C::kNe>, "input != other (bool)."));
  ops.push_back(CompareRow("lt", CpuCompare<C::kLt>, "input < other (bool)."));
  ops.push_back(CompareRow("le", CpuCompare<C::kLe>, "input <= other (bool)."));
  ops.push_back(CompareRow("gt", CpuCompare<C::kGt>, "input > other (bool)."));
  ops.push_back(CompareRow("ge", CpuCompare<C::kGe>, "input >= other (bool)."));
  ops.push_back(CompareRow("logical_and", CpuCompare<C::kAnd>,
                           "input != 0 and other != 0 (bool)."));
  ops.push_back(CompareRow("logical_or", CpuCompare<C::kOr>,
                           "input != 0 or other != 0 (bool)."));
  ops.push_back(CompareRow("logical_xor", CpuCompare<C::kXor>,
                           "Exactly one of input, other nonzero (bool)."));
  OpDef where = MakeOp("where", 3, 3, {},
                       "condition ? input : other, broadcasting all three.");
  where.infer = InferWhere;
  where.cpu = CpuWhere;
  where.examples = {Example({{2, 3}, {2, 3}, {3}}, {},
                            {DType::kBool, DType::kFloat32, DType::kFloat32})};
  ops.push_back(std::move(where));
  OpDef mf = MakeOp("masked_fill", 3, 3, {},
                    "input with value where mask is true (value: 0-d).");
  mf.infer = InferMaskedFill;
  mf.cpu = CpuMaskedFill;
  mf.examples = {Example({{2, 3}, {3}, {}}, {},
                         {DType::kFloat32, DType::kBool, DType::kFloat32})};
  ops.push_back(std::move(mf));
  return ops;
}

}  // namespace tensord

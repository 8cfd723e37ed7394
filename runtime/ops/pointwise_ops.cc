// Binary arithmetic with broadcasting and PyTorch type promotion: add, sub,
// mul, div (true/trunc/floor), pow, atan2, maximum, minimum, fmax, fmin,
// fmod, hypot, copysign, nextafter, zeta, remainder,
// floor_divide, bitwise and/or/xor, threshold_backward (relu's backward).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;

Specs InferBinary(absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  TD_ASSIGN_OR_RETURN(Shape shape,
                      BroadcastShapes(in[0].shape(), in[1].shape()));
  return std::vector<TensorSpec>{
      {ResultType(in), std::move(shape), in[0].device()}};
}

absl::Status NoBool(absl::Span<const Tensor> in, const char* what) {
  if (in[0].dtype() == DType::kBool && in[1].dtype() == DType::kBool) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is not supported for bool tensors"));
  }
  return absl::OkStatus();
}

// Integer and bool operands compute in the default float (atan2).
Specs InferFloating(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(auto specs, InferBinary(in, attrs, ctx));
  if (!IsFloating(specs[0].dtype)) specs[0].dtype = kDefaultFloat;
  return specs;
}

Specs InferDiv(absl::Span<const Tensor> in, const Attrs& attrs,
               const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(auto specs, InferBinary(in, attrs, ctx));
  const std::string& mode = attrs.String("rounding_mode");
  if (mode.empty()) {
    if (!IsFloating(specs[0].dtype)) specs[0].dtype = kDefaultFloat;
  } else if (mode != "trunc" && mode != "floor") {
    return absl::InvalidArgumentError(absl::StrCat(
        "div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
        "found '",
        mode, "'"));
  } else if (specs[0].dtype == DType::kBool) {
    specs[0].dtype = DType::kInt64;
  }
  return specs;
}

Specs InferSub(absl::Span<const Tensor> in, const Attrs& attrs,
               const OpContext& ctx) {
  if (in[0].dtype() == DType::kBool || in[1].dtype() == DType::kBool) {
    return absl::InvalidArgumentError(
        "Subtraction, the `-` operator, with a bool tensor is not supported. "
        "If you are trying to invert a mask, use the `~` or `logical_not()` "
        "operator instead.");
  }
  return InferBinary(in, attrs, ctx);
}

Specs InferArith(absl::Span<const Tensor> in, const Attrs& attrs,
                 const OpContext& ctx) {
  TD_RETURN_IF_ERROR(NoBool(in, "this op"));
  return InferBinary(in, attrs, ctx);
}

Specs InferBitwise(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(auto specs, InferBinary(in, attrs, ctx));
  if (IsFloating(specs[0].dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bitwise ops are only defined for integer and bool tensors, got ",
        DTypeName(specs[0].dtype)));
  }
  return specs;
}

template <cpu::BinaryOp kOp>
absl::Status CpuBinary(absl::Span<const Tensor> in,
                       absl::Span<const Tensor> out, const Attrs& attrs,
                       const OpContext& ctx) {
  const DType dtype = out[0].dtype();
  Tensor a_converted, b_converted;
  TD_ASSIGN_OR_RETURN(const Tensor* a,
                      CastRef(in[0], dtype, ctx, &a_converted));
  TD_ASSIGN_OR_RETURN(const Tensor* b,
                      CastRef(in[1], dtype, ctx, &b_converted));
  const double alpha =
      (kOp == cpu::BinaryOp::kAdd || kOp == cpu::BinaryOp::kSub)
          ? attrs.Float("alpha")
      : kOp == cpu::BinaryOp::kThresholdBackward ? attrs.Float("threshold")
                                                 : 1.0;
  const Shape& shape = out[0].shape();
  return cpu::Binary(kOp, a->BroadcastView(shape), b->BroadcastView(shape),
                     alpha, out[0].view());
}

absl::Status CpuDiv(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                    const Attrs& attrs, const OpContext& ctx) {
  const std::string& mode = attrs.String("rounding_mode");
  if (mode == "trunc")
    return CpuBinary<cpu::BinaryOp::kTruncDiv>(in, out, attrs, ctx);
  if (mode == "floor")
    return CpuBinary<cpu::BinaryOp::kFloorDiv>(in, out, attrs, ctx);
  return CpuBinary<cpu::BinaryOp::kDiv>(in, out, attrs, ctx);
}

OpDef BinaryRow(std::string name, InferFn infer, KernelFn cpu_fn,
                std::string doc) {
  OpDef def = MakeOp(std::move(name), 2, 2, {}, std::move(doc));
  def.infer = infer;
  def.cpu = cpu_fn;
  def.examples = {Example({{2, 3}, {3}}), Example({{2, 1}, {}})};
  return def;
}

}  // namespace

KernelFn CudaAddKernel();  // cuda_pointwise.cc: nullptr without CUDA

std::vector<OpDef> PointwiseOps() {
  using B = cpu::BinaryOp;
  std::vector<OpDef> ops;
  OpDef add = BinaryRow("add", InferBinary, CpuBinary<B::kAdd>,
                        "input + alpha * other, broadcasting.");
  add.attrs = {Optional("alpha", AttrType::kFloat, 1.0)};
  add.cuda = CudaAddKernel();
  ops.push_back(std::move(add));
  OpDef sub = BinaryRow("sub", InferSub, CpuBinary<B::kSub>,
                        "input - alpha * other, broadcasting.");
  sub.attrs = {Optional("alpha", AttrType::kFloat, 1.0)};
  ops.push_back(std::move(sub));
  ops.push_back(BinaryRow("mul", InferBinary, CpuBinary<B::kMul>,
                          "input * other, broadcasting."));
  OpDef div = BinaryRow("div", InferDiv, CpuDiv,
                        "input / other: true division, or rounded with "
                        "rounding_mode 'trunc' or 'floor'.");
  div.attrs = {Optional("rounding_mode", AttrType::kString, std::string())};
  ops.push_back(std::move(div));
  ops.push_back(BinaryRow("pow", InferArith, CpuBinary<B::kPow>,
                          "input ** exponent (integers stay integers)."));
  ops.push_back(BinaryRow("atan2", InferFloating, CpuBinary<B::kAtan2>,
                          "atan2(input, other): the angle of the point "
                          "(other, input), in [-pi, pi], broadcasting."));
  // fmax/fmin of bools are or/and, as PyTorch's (its maximum/minimum).
  for (bool max : {true, false}) {
    OpDef def = BinaryRow(max ? "fmax" : "fmin", InferBinary,
                          max ? CpuBinary<B::kFmax> : CpuBinary<B::kFmin>,
                          max ? "Elementwise maximum ignoring NaN (NaN only "
                                "where both are; bool: or)."
                              : "Elementwise minimum ignoring NaN (NaN only "
                                "where both are; bool: and).");
    def.examples.push_back(
        Example({{2, 3}, {3}}, {}, {DType::kBool, DType::kBool}));
    ops.push_back(std::move(def));
  }
  ops.push_back(BinaryRow("fmod", InferArith, CpuBinary<B::kFmod>,
                          "C's remainder: the sign of input."));
  ops.push_back(BinaryRow("hypot", InferFloating, CpuBinary<B::kHypot>,
                          "sqrt(input ** 2 + other ** 2) without overflow."));
  ops.push_back(BinaryRow("copysign", InferFloating, CpuBinary<B::kCopysign>,
                          "|input| with the sign of other."));
  OpDef nextafter =
      BinaryRow("nextafter", InferFloating, CpuBinary<B::kNextafter>,
                "The next representable value after input towards other.");
  nextafter.differentiable = false;  // as PyTorch: no derivative
  ops.push_back(std::move(nextafter));
  OpDef zeta = BinaryRow("zeta", InferFloating, CpuBinary<B::kZeta>,
                         "The Hurwitz zeta function zeta(x=input, q=other).");
  zeta.examples = {Example({{2, 3}, {3}})};
  ops.push_back(std::move(zeta));
  ops.push_back(BinaryRow("maximum", InferBinary, CpuBinary<B::kMax>,
                          "Elementwise maximum (NaN propagates)."));
  ops.push_back(BinaryRow("minimum", InferBinary, CpuBinary<B::kMin>,
                          "Elementwise minimum (NaN propagates)."));
  ops.push_back(BinaryRow("remainder", InferArith, CpuBinary<B::kRemainder>,
                          "Python's modulus: the sign of the divisor."));
  OpDef floor_div = BinaryRow("floor_divide", InferArith,
                              CpuBinary<B::kFloorDiv>, "floor(input / other).");
  floor_div.differentiable = false;  // as PyTorch: no derivative
  ops.push_back(std::move(floor_div));
  OpDef threshold = BinaryRow(
      "threshold_backward", InferArith, CpuBinary<B::kThresholdBackward>,
      "grad_output where input > threshold, else 0: relu's backward in one "
      "pass (PyTorch's aten threshold_backward).");
  threshold.attrs = {Optional("threshold", AttrType::kFloat, 0.0)};
  ops.push_back(std::move(threshold));
  for (auto [name, op] : {std::pair{"bitwise_and", B::kBitAnd},
                          std::pair{"bitwise_or", B::kBitOr},
                          std::pair{"bitwise_xor", B::kBitXor}}) {
    KernelFn fn = op == B::kBitAnd  ? CpuBinary<B::kBitAnd>
                  : op == B::kBitOr ? CpuBinary<B::kBitOr>
                                    : CpuBinary<B::kBitXor>;
    OpDef def =
        BinaryRow(name, InferBitwise, fn,
                  "Bitwise op of integer or bool tensors, broadcasting.");
    def.differentiable = false;
    def.examples = {Example({{2, 3}, {3}}, {}, {DType::kInt64, DType::kInt64})};
    ops.push_back(std::move(def));
  }
  return ops;
}

}  // namespace tensord

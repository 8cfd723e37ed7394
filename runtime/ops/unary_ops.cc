// Unary math with PyTorch's dtype rules: transcendental ops give the default
// float type for integer/bool inputs; the others keep the input dtype.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;

// Same dtype, bool included (sign of a bool is itself, as in PyTorch).
Specs InferSame(absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[0].shape(), in[0].device()}};
}

// Same dtype; bool rejected (neg/abs/relu/... of bool are errors in PyTorch).
Specs InferKeep(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext& ctx) {
  if (in[0].dtype() == DType::kBool) {
    return absl::InvalidArgumentError(
        "this op is not defined for bool tensors; convert with .to() first");
  }
  return InferSame(in, attrs, ctx);
}

// Floating result: integer and bool inputs give float32.
Specs InferFloat(absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  const DType d = IsFloating(in[0].dtype()) ? in[0].dtype() : kDefaultFloat;
  return std::vector<TensorSpec>{{d, in[0].shape(), in[0].device()}};
}

Specs InferBitwiseNot(absl::Span<const Tensor> in, const Attrs&,
                      const OpContext&) {
  if (IsFloating(in[0].dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bitwise_not is only defined for integer and bool tensors, got ",
        DTypeName(in[0].dtype())));
  }
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[0].shape(), in[0].device()}};
}

Specs InferBool(absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  return std::vector<TensorSpec>{{DType::kBool, in[0].shape(), in[0].device()}};
}

template <cpu::UnaryOp kOp>
absl::Status CpuUnary(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs&, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  return cpu::Unary(kOp, x.view(), out[0].view());
}

absl::Status CpuLogicalNot(absl::Span<const Tensor> in,
                           absl::Span<const Tensor> out, const Attrs&,
                           const OpContext&) {
  return cpu::LogicalNot(in[0].view(), out[0].view());
}

absl::Status CpuSignbit(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs&,
                        const OpContext&) {
  return cpu::Signbit(in[0].view(), out[0].view());
}

// frexp: (mantissa of the input's dtype, exponent int32), floating only.
Specs InferFrexp(absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  if (!IsFloating(in[0].dtype())) {
    return absl::InvalidArgumentError(
        absl::StrCat("torch.frexp() only supports floating-point dtypes, got ",
                     DTypeName(in[0].dtype())));
  }
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[0].shape(), in[0].device()},
      {DType::kInt32, in[0].shape(), in[0].device()}};
}

absl::Status CpuFrexp(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs&, const OpContext&) {
  return cpu::Frexp(in[0].view(), out[0].view(), out[1].view());
}

Specs InferPolygamma(absl::Span<const Tensor> in, const Attrs& attrs,
                     const OpContext& ctx) {
  if (attrs.Int("n") < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "polygamma: n must be non-negative, got ", attrs.Int("n")));
  }
  return InferFloat(in, attrs, ctx);
}

absl::Status CpuPolygamma(absl::Span<const Tensor> in,
                          absl::Span<const Tensor> out, const Attrs& attrs,
                          const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  return cpu::Polygamma(static_cast<int>(attrs.Int("n")), x.view(),
                        out[0].view());
}

bool Integral(double v) { return std::floor(v) == v; }

// clamp: bounds are attributes (None = unbounded); an integer tensor with a
// fractional bound gives float32, as PyTorch's scalar promotion does, and a
// bool tensor int64 (or float32 for a fractional bound): PyTorch promotes it
// with the number bound and clamps in that dtype, so clamp_ of a bool tensor
// fails as its in-place cast does. (PyTorch refuses a bool bound, which the
// float attributes cannot tell from 0 and 1.)
Specs InferClamp(absl::Span<const Tensor> in, const Attrs& attrs,
                 const OpContext&) {
  if (!attrs.Has("min") && !attrs.Has("max")) {
    return absl::InvalidArgumentError(
        "At least one of 'min' or 'max' must not be None");
  }
  DType d = in[0].dtype() == DType::kBool ? DType::kInt64 : in[0].dtype();
  for (const char* name : {"min", "max"}) {
    if (attrs.Has(name) && !IsFloating(d) && !Integral(attrs.Float(name))) {
      d = kDefaultFloat;
    }
  }
  return std::vector<TensorSpec>{{d, in[0].shape(), in[0].device()}};
}

absl::Status CpuClamp(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  const bool lo = attrs.Has("min"), hi = attrs.Has("max");
  return cpu::Clamp(x.view(), lo, lo ? attrs.Float("min") : 0, hi,
                    hi ? attrs.Float("max") : 0, out[0].view());
}

OpDef UnaryRow(std::string name, InferFn infer, KernelFn fn, std::string doc) {
  OpDef def = MakeOp(std::move(name), 1, 1, {}, std::move(doc));
  def.infer = infer;
  def.cpu = fn;
  return def;
}

}  // namespace

std::vector<OpDef> UnaryOps() {
  using U = cpu::UnaryOp;
  std::vector<OpDef> ops;
  auto keep = [&](const char* n, KernelFn f, const char* doc) {
    ops.push_back(UnaryRow(n, InferKeep, f, doc));
  };
  auto flt = [&](const char* n, KernelFn f, const char* doc) {
    ops.push_back(UnaryRow(n, InferFloat, f, doc));
  };
  keep("neg", CpuUnary<U::kNeg>, "-input.");
  keep("abs", CpuUnary<U::kAbs>, "|input|.");
  OpDef sign = UnaryRow("sign", InferSame, CpuUnary<U::kSign>,
                        "-1, 0 or 1 by the sign of input (a bool input is "
                        "its own sign).");
  sign.examples = {Example({{2, 3}}), Example({{2, 3}}, {}, {DType::kBool})};
  ops.push_back(std::move(sign));
  keep("relu", CpuUnary<U::kRelu>, "max(input, 0).");
  keep("floor", CpuUnary<U::kFloor>, "Largest integer <= input.");
  keep("ceil", CpuUnary<U::kCeil>, "Smallest integer >= input.");
  keep("round", CpuUnary<U::kRound>, "Nearest integer, halves to even.");
  keep("trunc", CpuUnary<U::kTrunc>, "Integer part of input.");
  keep("square", CpuUnary<U::kSquare>, "input * input.");
  flt("exp", CpuUnary<U::kExp>, "e ** input.");
  flt("log", CpuUnary<U::kLog>, "Natural logarithm.");
  flt("log1p", CpuUnary<U::kLog1p>, "log(1 + input), accurate near 0.");
  flt("expm1", CpuUnary<U::kExpm1>, "exp(input) - 1, accurate near 0.");
  flt("sqrt", CpuUnary<U::kSqrt>, "Square root.");
  flt("rsqrt", CpuUnary<U::kRsqrt>, "1 / sqrt(input).");
  flt("sin", CpuUnary<U::kSin>, "Sine.");
  flt("cos", CpuUnary<U::kCos>, "Cosine.");
  flt("tanh", CpuUnary<U::kTanh>, "Hyperbolic tangent.");
  flt("sigmoid", CpuUnary<U::kSigmoid>, "1 / (1 + exp(-input)).");
  flt("silu", CpuUnary<U::kSilu>, "input * sigmoid(input).");
  flt("erf", CpuUnary<U::kErf>, "The error function.");
  flt("reciprocal", CpuUnary<U::kReciprocal>, "1 / input.");
  flt("tan", CpuUnary<U::kTan>, "Tangent.");
  flt("atan", CpuUnary<U::kAtan>, "Inverse tangent.");
  flt("asin", CpuUnary<U::kAsin>, "Inverse sine (NaN outside [-1, 1]).");
  flt("acos", CpuUnary<U::kAcos>, "Inverse cosine (NaN outside [-1, 1]).");
  flt("sinh", CpuUnary<U::kSinh>, "Hyperbolic sine.");
  flt("cosh", CpuUnary<U::kCosh>, "Hyperbolic cosine.");
  flt("asinh", CpuUnary<U::kAsinh>, "Inverse hyperbolic sine.");
  flt("acosh", CpuUnary<U::kAcosh>, "Inverse hyperbolic cosine (x >= 1).");
  flt("atanh", CpuUnary<U::kAtanh>, "Inverse hyperbolic tangent.");
  flt("log2", CpuUnary<U::kLog2>, "Base-2 logarithm.");
  flt("log10", CpuUnary<U::kLog10>, "Base-10 logarithm.");
  flt("exp2", CpuUnary<U::kExp2>, "2 ** input.");
  flt("erfc", CpuUnary<U::kErfc>, "1 - erf(input), accurate in the tails.");
  flt("erfinv", CpuUnary<U::kErfinv>, "The inverse of erf on (-1, 1).");
  flt("lgamma", CpuUnary<U::kLgamma>, "log(|gamma(input)|).");
  flt("digamma", CpuUnary<U::kDigamma>,
      "d/dx lgamma(x); -inf/inf at -0/+0, NaN at negative integers.");
  OpDef polygamma = MakeOp("polygamma", 1, 1, {Required("n", AttrType::kInt)},
                           "The n-th derivative of digamma (n >= 0), PyTorch's "
                           "polygamma(n, input).");
  polygamma.infer = InferPolygamma;
  polygamma.cpu = CpuPolygamma;
  polygamma.examples = {Example({{2, 3}}, {{"n", int64_t{1}}}),
                        Example({{2, 3}}, {{"n", int64_t{3}}})};
  ops.push_back(std::move(polygamma));
  // Differentiable through the mantissa (derivatives_math.cc); CPU only.
  OpDef frexp = UnaryRow("frexp", InferFrexp, CpuFrexp,
                         "(mantissa, exponent) with input = mantissa * "
                         "2^exponent, |mantissa| in [0.5, 1) (0, inf and NaN "
                         "keep their value, exponent 0); exponent int32.");
  frexp.num_outputs = 2;
  ops.push_back(std::move(frexp));
  OpDef signbit = UnaryRow("signbit", InferBool, CpuSignbit,
                           "Whether the sign bit is set (bool; -0.0 too).");
  signbit.differentiable = false;
  ops.push_back(std::move(signbit));
  OpDef bnot =
      UnaryRow("bitwise_not", InferBitwiseNot, CpuUnary<U::kBitwiseNot>,
               "~input for integer and bool tensors.");
  bnot.differentiable = false;
  bnot.examples = {Example({{2, 3}}, {}, {DType::kInt32})};
  ops.push_back(std::move(bnot));
  OpDef lnot =
      UnaryRow("logical_not", InferBool, CpuLogicalNot, "input == 0 (bool).");
  lnot.differentiable = false;
  ops.push_back(std::move(lnot));
  OpDef clamp = MakeOp("clamp", 1, 1,
                       {Optional("min", AttrType::kFloat, std::monostate{}),
                        Optional("max", AttrType::kFloat, std::monostate{})},
                       "min(max(input, min), max); either bound may be None.");
  clamp.infer = InferClamp;
  clamp.cpu = CpuClamp;
  clamp.examples = {Example({{2, 3}}, {{"min", -0.5}, {"max", 0.5}})};
  ops.push_back(std::move(clamp));
  return ops;
}

}  // namespace tensord

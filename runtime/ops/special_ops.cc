// torch.special's pointwise functions: the normal-distribution ones (ndtri,
// log_ndtr, erfcx), the Bessel functions (i0, i0e, i1, i1e, bessel_j0/j1/
// y0/y1, modified_bessel_i0/i1/k0/k1, scaled_modified_bessel_k0/k1,
// spherical_bessel_j0), the Airy function airy_ai and the orthogonal
// polynomials p_n(x) (chebyshev_polynomial_t/u/v/w, their shifted forms,
// hermite_polynomial_h/he, laguerre_polynomial_l, legendre_polynomial_p),
// and the regularized incomplete gamma functions igamma and igammac
// (torch.special.gammainc/gammaincc; named as ATen's igamma/igammac).
// Rows are named as PyTorch's torch.special functions without the prefix
// (as zeta); the scalar math is runtime/core/special_ops.h, shared by the
// CPU and CUDA kernels (Note [Special function ops]). Integer and bool
// inputs give float32; float16 and bfloat16 compute in float32 (Note [Half
// compute]).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;

Specs InferUnaryFloat(absl::Span<const Tensor> in, const Attrs&,
                      const OpContext&) {
  const DType d = IsFloating(in[0].dtype()) ? in[0].dtype() : kDefaultFloat;
  return std::vector<TensorSpec>{{d, in[0].shape(), in[0].device()}};
}

// The two inputs (x and n, a and x) broadcast and promote together; integer
// results become float32.
Specs InferBinaryFloat(absl::Span<const Tensor> in, const Attrs&,
                       const OpContext&) {
  TD_ASSIGN_OR_RETURN(Shape shape,
                      BroadcastShapes(in[0].shape(), in[1].shape()));
  DType d = ResultType(in);
  if (!IsFloating(d)) d = kDefaultFloat;
  return std::vector<TensorSpec>{{d, std::move(shape), in[0].device()}};
}

// igamma/igammac: as PyTorch, the promoted dtype must be floating (integer
// and bool operands alone are refused, not computed in float32).
Specs InferIncompleteGamma(absl::Span<const Tensor> in, const Attrs& attrs,
                           const OpContext& ctx) {
  const DType d = ResultType(in);
  if (!IsFloating(d)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the incomplete gamma functions are only defined for floating "
        "tensors (PyTorch's igamma is not implemented for ",
        DTypeName(d), "); convert with .to(torch.float32) first"));
  }
  return InferBinaryFloat(in, attrs, ctx);
}

template <cpu::UnaryOp kOp>
absl::Status CpuSpecialUnary(absl::Span<const Tensor> in,
                             absl::Span<const Tensor> out, const Attrs&,
                             const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  return cpu::Unary(kOp, x.view(), out[0].view());
}

template <cpu::BinaryOp kOp>
absl::Status CpuSpecialBinary(absl::Span<const Tensor> in,
                              absl::Span<const Tensor> out, const Attrs&,
                              const OpContext& ctx) {
  const DType dtype = out[0].dtype();
  Tensor x_converted, n_converted;
  TD_ASSIGN_OR_RETURN(const Tensor* x,
                      CastRef(in[0], dtype, ctx, &x_converted));
  TD_ASSIGN_OR_RETURN(const Tensor* n,
                      CastRef(in[1], dtype, ctx, &n_converted));
  const Shape& shape = out[0].shape();
  return cpu::Binary(kOp, x->BroadcastView(shape), n->BroadcastView(shape), 1.0,
                     out[0].view());
}

constexpr char kNoGradient[] =
    " Not differentiable (as in PyTorch, which defines no derivative).";

}  // namespace

std::vector<OpDef> SpecialOps() {
  using U = cpu::UnaryOp;
  using B = cpu::BinaryOp;
  std::vector<OpDef> ops;
  // Differentiable ones: their formulas are in derivatives_math.cc.
  auto unary = [&](const char* name, KernelFn fn, std::string doc,
                   bool differentiable) {
    OpDef def =
        MakeOp(name, 1, 1, {}, differentiable ? doc : doc + kNoGradient);
    def.infer = InferUnaryFloat;
    def.cpu = fn;
    def.differentiable = differentiable;
    ops.push_back(std::move(def));
  };
  unary("i0", CpuSpecialUnary<U::kI0>,
        "The modified Bessel function of the first kind of order 0, I0 "
        "(torch.i0, torch.special.i0); NaN at +-inf, as PyTorch.",
        true);
  unary("i0e", CpuSpecialUnary<U::kI0e>, "exp(-|input|) * I0(input).", true);
  unary("i1", CpuSpecialUnary<U::kI1>,
        "The modified Bessel function of the first kind of order 1, I1; NaN "
        "at +-inf, as PyTorch.",
        true);
  unary("i1e", CpuSpecialUnary<U::kI1e>, "exp(-|input|) * I1(input).", true);
  unary("ndtri", CpuSpecialUnary<U::kNdtri>,
        "The standard normal quantile: x with Phi(x) = input, for input in "
        "[0, 1] (+-inf at the ends, NaN outside).",
        true);
  unary("log_ndtr", CpuSpecialUnary<U::kLogNdtr>,
        "log(Phi(input)), Phi the standard normal CDF, accurate in both "
        "tails.",
        true);
  unary("erfcx", CpuSpecialUnary<U::kErfcx>,
        "The scaled complementary error function exp(input^2) * "
        "erfc(input).",
        true);
  unary("bessel_j0", CpuSpecialUnary<U::kBesselJ0>,
        "The Bessel function of the first kind of order 0; NaN at +-inf, as "
        "PyTorch.",
        false);
  unary("bessel_j1", CpuSpecialUnary<U::kBesselJ1>,
        "The Bessel function of the first kind of order 1; NaN at +-inf, as "
        "PyTorch.",
        false);
  unary("bessel_y0", CpuSpecialUnary<U::kBesselY0>,
        "The Bessel function of the second kind of order 0 (-inf at 0, NaN "
        "for negative input and at inf, as PyTorch).",
        false);
  unary("bessel_y1", CpuSpecialUnary<U::kBesselY1>,
        "The Bessel function of the second kind of order 1 (-inf at 0, NaN "
        "for negative input and at inf, as PyTorch).",
        false);
  unary("modified_bessel_i0", CpuSpecialUnary<U::kI0>,
        "I0(input), as i0 (PyTorch's torch.special.modified_bessel_i0).",
        false);
  unary("modified_bessel_i1", CpuSpecialUnary<U::kI1>,
        "I1(input), as i1 (PyTorch's torch.special.modified_bessel_i1).",
        false);
  unary("modified_bessel_k0", CpuSpecialUnary<U::kBesselK0>,
        "The modified Bessel function of the second kind of order 0, K0 (inf "
        "at 0, NaN for negative input).",
        false);
  unary("modified_bessel_k1", CpuSpecialUnary<U::kBesselK1>,
        "The modified Bessel function of the second kind of order 1, K1 (inf "
        "at 0, NaN for negative input).",
        false);
  unary("scaled_modified_bessel_k0", CpuSpecialUnary<U::kScaledBesselK0>,
        "exp(input) * K0(input), finite for large input.", false);
  unary("scaled_modified_bessel_k1", CpuSpecialUnary<U::kScaledBesselK1>,
        "exp(input) * K1(input), finite for large input.", false);
  unary("spherical_bessel_j0", CpuSpecialUnary<U::kSphericalBesselJ0>,
        "The spherical Bessel function of the first kind of order 0, "
        "sin(input) / input (1 at 0).",
        false);
  unary("airy_ai", CpuSpecialUnary<U::kAiryAi>,
        "The Airy function Ai (Cephes' algorithm, as PyTorch's, computed in "
        "double); NaN at +-inf, 0 above 103.892, as PyTorch.",
        false);
  auto polynomial = [&](const char* name, KernelFn fn, const char* what) {
    OpDef def =
        MakeOp(name, 2, 2, {},
               std::string(what) +
                   " p_n(x) of x = input and degree n, truncated to an "
                   "integer (n < 0, NaN or infinite gives 0), broadcasting; "
                   "computed in the input's floating dtype as PyTorch does. "
                   "Degrees above 2^20 give NaN where only the recurrence "
                   "exists (Hermite, Laguerre, Legendre)." +
                   kNoGradient);
    def.infer = InferBinaryFloat;
    def.cpu = fn;
    def.differentiable = false;
    // Random normal degrees (-2..2) here; hand-computed higher ones are in
    // kernels/cpu/math_test.cc.
    def.examples = {Example({{2, 3}, {3}}), Example({{2, 3}, {}})};
    ops.push_back(std::move(def));
  };
  polynomial("chebyshev_polynomial_t", CpuSpecialBinary<B::kChebyshevT>,
             "The Chebyshev polynomial of the first kind T_n(x):");
  polynomial("chebyshev_polynomial_u", CpuSpecialBinary<B::kChebyshevU>,
             "The Chebyshev polynomial of the second kind U_n(x):");
  polynomial("chebyshev_polynomial_v", CpuSpecialBinary<B::kChebyshevV>,
             "The Chebyshev polynomial of the third kind V_n(x):");
  polynomial("chebyshev_polynomial_w", CpuSpecialBinary<B::kChebyshevW>,
             "The Chebyshev polynomial of the fourth kind W_n(x):");
  polynomial("shifted_chebyshev_polynomial_t",
             CpuSpecialBinary<B::kShiftedChebyshevT>,
             "The shifted Chebyshev polynomial T_n(2x - 1):");
  polynomial("shifted_chebyshev_polynomial_u",
             CpuSpecialBinary<B::kShiftedChebyshevU>,
             "The shifted Chebyshev polynomial U_n(2x - 1):");
  polynomial("shifted_chebyshev_polynomial_v",
             CpuSpecialBinary<B::kShiftedChebyshevV>,
             "The shifted Chebyshev polynomial V_n(2x - 1):");
  polynomial("shifted_chebyshev_polynomial_w",
             CpuSpecialBinary<B::kShiftedChebyshevW>,
             "The shifted Chebyshev polynomial W_n(2x - 1):");
  polynomial("hermite_polynomial_h", CpuSpecialBinary<B::kHermiteH>,
             "The physicists' Hermite polynomial H_n(x):");
  polynomial("hermite_polynomial_he", CpuSpecialBinary<B::kHermiteHe>,
             "The probabilists' Hermite polynomial He_n(x):");
  polynomial("laguerre_polynomial_l", CpuSpecialBinary<B::kLaguerreL>,
             "The Laguerre polynomial L_n(x):");
  polynomial("legendre_polynomial_p", CpuSpecialBinary<B::kLegendreP>,
             "The Legendre polynomial P_n(x):");
  // Differentiable in x only (derivatives_math.cc), as PyTorch.
  auto incomplete_gamma = [&](const char* name, KernelFn fn, const char* what) {
    OpDef def = MakeOp(
        name, 2, 2, {},
        std::string(what) +
            " of a = input and x = other, broadcasting and promoting to a "
            "floating dtype (torch.special.gammainc/gammaincc); NaN for a < 0 "
            "or x < 0, SciPy's values on the boundaries (a = 0, x = 0, "
            "infinities). Computed in double (Note [Incomplete gamma]).");
    def.infer = InferIncompleteGamma;
    def.cpu = fn;
    def.examples = {Example({{2, 3}, {3}}), Example({{2, 3}, {}})};
    for (OpExample& e : def.examples) e.positive = true;
    ops.push_back(std::move(def));
  };
  incomplete_gamma("igamma", CpuSpecialBinary<B::kIgamma>,
                   "The regularized lower incomplete gamma function P(a, x)");
  incomplete_gamma("igammac", CpuSpecialBinary<B::kIgammac>,
                   "The regularized upper incomplete gamma function Q(a, x) "
                   "= 1 - P(a, x)");
  return ops;
}

}  // namespace tensord

// Backward formulas of the trigonometric, hyperbolic, logarithmic and special
// function rows (torch.special's i0, i0e, i1, i1e, ndtri, log_ndtr, erfcx
// among them; its other Bessel functions and polynomials have none in
// PyTorch either), of fmax/fmin/fmod/hypot/copysign/zeta/igamma/igammac
// and frexp (see derivatives.h), as PyTorch's derivatives.yaml writes them. G
// is the output's gradient.
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/ops/derivatives.h"

namespace tensord {
namespace {

GradValue G(GradCtx& g, int i = 0) { return g.grad(i); }
GradValue Rsqrt(GradCtx& g, const GradValue& v) { return g.Op("rsqrt", {v}); }

// fmax/fmin: input 0 takes the gradient where it was chosen (it wins ties,
// and wins wherever the other is NaN), input 1 everywhere else.
template <bool kMax>
Grads FmaxFminGrad(GradCtx& g) {
  GradValue a = g.in(0), b = g.in(1), z = Zero(g, G(g));
  GradValue a_chosen = g.Op(
      "logical_or", {Cmp(g, kMax ? "ge" : "le", a, b), Cmp(g, "ne", b, b)});
  return {g.needs(0) ? Where(g, a_chosen, G(g), z) : GradValue(),
          g.needs(1) ? Where(g, a_chosen, z, G(g)) : GradValue()};
}

// d/dx I1(x) = I0(x) - I1(x) / x and d/dx i1e(x) = i0e(x) - i1e(x) (sign(x)
// + 1/x), both 1/2 at 0: taken as 1/2 for |x| < 1e-7, where the quotient
// loses its digits (denormal x) and the true value differs from 1/2 by
// less than 3x^2/16 (1e-15).
Grads BesselI1Grad(GradCtx& g, bool scaled) {
  GradValue x = g.in(0);
  GradValue tiny = Cmp(g, "lt", g.Op("abs", {x}), g.Num(1e-7, x));
  GradValue safe_x = Where(g, tiny, g.Num(1, x), x);
  GradValue d = scaled ? g.Op("i0e", {x}) - g.out() * (g.Op("sign", {x}) +
                                                       g.Num(1, x) / safe_x)
                       : g.Op("i0", {x}) - g.out() / safe_x;
  return {G(g) * Where(g, tiny, g.Num(0.5, x), d)};
}

// igamma (sign 1) and igammac (-1): d/dx P(a, x) = x^(a-1) e^-x / Gamma(a);
// none for a, as PyTorch (which raises "not implemented").
template <int kSign>
Grads IncompleteGammaGrad(GradCtx& g) {
  GradValue ga;
  if (g.needs(0)) {
    ga = GradValue(absl::UnimplementedError(absl::StrCat(
                       "the derivative of ", kSign > 0 ? "igamma" : "igammac",
                       " with respect to input (a) is not implemented (as in "
                       "PyTorch)")),
                   &g);
  }
  if (!g.needs(1)) return {ga, GradValue()};
  GradValue a = g.in(0), x = g.in(1);
  GradValue d =
      g.Op("exp", {(a + -1.0) * g.Op("log", {x}) - x - g.Op("lgamma", {a})});
  return {ga, kSign > 0 ? G(g) * d : -(G(g) * d)};
}

std::vector<GradRow> Rows() {
  return {
      {"tan",
       {},
       {0},
       [](GradCtx& g) -> Grads { return {G(g) * (g.out() * g.out() + 1.0)}; }},
      {"atan",
       {0},
       {},
       [](GradCtx& g) -> Grads { return {G(g) / (g.in(0) * g.in(0) + 1.0)}; }},
      {"asin",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {G(g) * Rsqrt(g, -(g.in(0) * g.in(0)) + 1.0)};
       }},
      {"acos",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {-G(g) * Rsqrt(g, -(g.in(0) * g.in(0)) + 1.0)};
       }},
      {"sinh",
       {0},
       {},
       [](GradCtx& g) -> Grads { return {G(g) * g.Op("cosh", {g.in(0)})}; }},
      {"cosh",
       {0},
       {},
       [](GradCtx& g) -> Grads { return {G(g) * g.Op("sinh", {g.in(0)})}; }},
      {"asinh",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {G(g) * Rsqrt(g, g.in(0) * g.in(0) + 1.0)};
       }},
      {"acosh",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {G(g) * Rsqrt(g, g.in(0) * g.in(0) + -1.0)};
       }},
      {"atanh",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {G(g) / (-(g.in(0) * g.in(0)) + 1.0)};
       }},
      {"log2",
       {0},
       {},
       [](GradCtx& g) -> Grads { return {G(g) / (g.in(0) * M_LN2)}; }},
      {"log10",
       {0},
       {},
       [](GradCtx& g) -> Grads { return {G(g) / (g.in(0) * M_LN10)}; }},
      {"exp2",
       {},
       {0},
       [](GradCtx& g) -> Grads { return {G(g) * g.out() * M_LN2}; }},
      {"erfc",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         GradValue x = g.in(0);
         return {G(g) * g.Op("exp", {-(x * x)}) * -M_2_SQRTPI};
       }},
      {"erfinv",  // sqrt(pi) / 2 * exp(erfinv(x)^2)
       {},
       {0},
       [](GradCtx& g) -> Grads {
         return {G(g) * g.Op("exp", {g.out() * g.out()}) * (1 / M_2_SQRTPI)};
       }},
      {"lgamma",
       {0},
       {},
       [](GradCtx& g) -> Grads { return {G(g) * g.Op("digamma", {g.in(0)})}; }},
      {"digamma",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {G(g) * g.Op("polygamma", {g.in(0)}, {{"n", int64_t{1}}})};
       }},
      {"polygamma",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         const int64_t n = g.attrs().Int("n");
         return {G(g) * g.Op("polygamma", {g.in(0)}, {{"n", n + 1}})};
       }},
      {"i0",
       {0},
       {},
       [](GradCtx& g) -> Grads { return {G(g) * g.Op("i1", {g.in(0)})}; }},
      {"i0e",  // i1e(x) - sign(x) i0e(x)
       {0},
       {0},
       [](GradCtx& g) -> Grads {
         GradValue x = g.in(0);
         return {G(g) * (g.Op("i1e", {x}) - g.Op("sign", {x}) * g.out())};
       }},
      {"i1",
       {0},
       {0},
       [](GradCtx& g) -> Grads { return BesselI1Grad(g, false); }},
      {"i1e",
       {0},
       {0},
       [](GradCtx& g) -> Grads { return BesselI1Grad(g, true); }},
      {"ndtri",  // sqrt(2 pi) exp(ndtri(p)^2 / 2)
       {},
       {0},
       [](GradCtx& g) -> Grads {
         return {G(g) * g.Op("exp", {g.out() * g.out() * 0.5}) *
                 2.50662827463100050242};
       }},
      // phi(x) / Phi(x) = exp(-(log_ndtr(x) + x^2 / 2)) / sqrt(2 pi): no
      // overflow in either tail.
      {"log_ndtr",
       {0},
       {0},
       [](GradCtx& g) -> Grads {
         GradValue x = g.in(0);
         return {G(g) * g.Op("exp", {-(g.out() + x * x * 0.5)}) *
                 0.39894228040143267794};
       }},
      {"erfcx",  // 2 x erfcx(x) - 2 / sqrt(pi)
       {0},
       {0},
       [](GradCtx& g) -> Grads {
         return {G(g) * (g.in(0) * g.out() * 2.0 + -M_2_SQRTPI)};
       }},
      {"fmax", {0, 1}, {}, FmaxFminGrad<true>},
      {"fmin", {0, 1}, {}, FmaxFminGrad<false>},
      {"fmod",
       {0, 1},
       {},
       [](GradCtx& g) -> Grads {
         return {G(g),
                 g.needs(1)
                     ? -G(g) * g.Op("div", {g.in(0), g.in(1)},
                                    {{"rounding_mode", std::string("trunc")}})
                     : GradValue()};
       }},
      {"hypot",
       {0, 1},
       {0},
       [](GradCtx& g) -> Grads {
         return {g.needs(0) ? G(g) * g.in(0) / g.out() : GradValue(),
                 g.needs(1) ? G(g) * g.in(1) / g.out() : GradValue()};
       }},
      // d/dx copysign(x, y) = sign(x) * sign(y) = out / x; 0 at x == 0.
      {"copysign",
       {0},
       {0},
       [](GradCtx& g) -> Grads {
         GradValue x = g.in(0), z = Zero(g, G(g));
         GradValue ratio =
             Where(g, Cmp(g, "eq", x, Zero(g, x)), z, g.out() / x);
         return {G(g) * ratio, g.needs(1) ? g.ZerosOfInput(1) : GradValue()};
       }},
      // As PyTorch: d/dq zeta(x, q) = -x zeta(x + 1, q); none for x.
      {"zeta",
       {0, 1},
       {},
       [](GradCtx& g) -> Grads {
         GradValue gx;
         if (g.needs(0)) {
           gx = GradValue(absl::UnimplementedError(
                              "the derivative of zeta with respect to x is "
                              "not implemented (as in PyTorch)"),
                          &g);
         }
         GradValue x = g.in(0);
         return {gx, g.needs(1) ? -G(g) * x * g.Op("zeta", {x + 1.0, g.in(1)})
                                : GradValue()};
       }},
      {"igamma", {0, 1}, {}, IncompleteGammaGrad<1>},
      // The mantissa's gradient over 2^exponent; the exponent has none.
      {"frexp",
       {},
       {1},
       [](GradCtx& g) -> Grads {
         return {G(g, 0) / g.Op("exp2", {g.out(1)})};
       }},
      {"igammac", {0, 1}, {}, IncompleteGammaGrad<-1>},
  };
}

}  // namespace

std::vector<GradRow> MathGrads() { return Rows(); }

}  // namespace tensord

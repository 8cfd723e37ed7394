// Backward formulas of the unary, binary, where/masked_fill and in-place
// rows (see derivatives.h). G is the output's gradient.
#include <cmath>

#include "runtime/device.h"
#include "runtime/ops/derivatives.h"

namespace tensord {
namespace {

GradValue G(GradCtx& g) { return g.grad(); }
GradValue One(GradCtx& g, const GradValue& like) { return g.Num(1, like); }
Grads Zeros(GradCtx& g) {
  Grads r;
  for (int i = 0; i < g.num_inputs(); ++i) {
    r.push_back(g.needs(i) ? g.ZerosOfInput(i) : GradValue());
  }
  return r;
}

// maximum/minimum: the larger (smaller) input gets the gradient; ties split
// it evenly, as PyTorch.
template <bool kMax>
Grads MaxMinGrad(GradCtx& g) {
  GradValue a = g.in(0), b = g.in(1), z = Zero(g, G(g));
  GradValue half = G(g) * 0.5;
  GradValue eq = Cmp(g, "eq", a, b);
  GradValue a_wins = Cmp(g, kMax ? "gt" : "lt", a, b);
  GradValue b_wins = Cmp(g, kMax ? "lt" : "gt", a, b);
  return {Where(g, a_wins, G(g), Where(g, eq, half, z)),
          Where(g, b_wins, G(g), Where(g, eq, half, z))};
}

Grads PowGrad(GradCtx& g) {
  GradValue a = g.in(0), b = g.in(1), z = Zero(g, G(g));
  GradValue ga, gb;
  if (g.needs(0)) {  // b * a^(b-1); 0 where b == 0
    GradValue d = G(g) * b * g.Op("pow", {a, b + -1.0});
    ga = Where(g, Cmp(g, "eq", b, Zero(g, b)), z, d);
  }
  if (g.needs(1)) {  // out * log(a); 0 where a == 0 and b >= 0
    GradValue d = G(g) * g.out() * g.Op("log", {a});
    GradValue mask = g.Op("logical_and", {Cmp(g, "eq", a, Zero(g, a)),
                                          Cmp(g, "ge", b, Zero(g, b))});
    gb = Where(g, mask, z, d);
  }
  return {ga, gb};
}

Grads DivGrad(GradCtx& g) {
  if (!g.attrs().String("rounding_mode").empty()) return Zeros(g);
  GradValue b = g.in(1);
  return {g.needs(0) ? G(g) / b : GradValue(),
          g.needs(1) ? -G(g) * g.in(0) / (b * b) : GradValue()};
}

Grads ClampGrad(GradCtx& g) {
  GradValue x = g.in(0), mask;
  if (g.attrs().Has("min")) {
    mask = Cmp(g, "ge", x, g.Num(g.attrs().Float("min"), x));
  }
  if (g.attrs().Has("max")) {
    GradValue le = Cmp(g, "le", x, g.Num(g.attrs().Float("max"), x));
    mask = mask.ctx() == nullptr ? le : g.Op("logical_and", {mask, le});
  }
  if (mask.ctx() == nullptr) return {G(g)};
  return {Where(g, mask, G(g), Zero(g, G(g)))};
}

// One fused row (gelu_ops.cc); recorded for a second order (create_graph),
// the composition of differentiable rows.
Grads GeluGrad(GradCtx& g) {
  GradValue x = g.in(0);
  const std::string& approximate = g.attrs().String("approximate");
  if (g.op_ctx().recorder == nullptr && x.value().ok()) {
    return {g.Op("gelu_backward", {G(g), x}, {{"approximate", approximate}})};
  }
  if (approximate == "tanh") {  // s + x s (1 - s) 2 beta (1 + 3 kappa x^2)
    const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
    GradValue u = (x + x * x * x * kappa) * beta;
    GradValue s = g.Op("sigmoid", {u * 2.0});
    GradValue du = x * x * (6 * beta * kappa) + 2 * beta;
    return {G(g) * (s + x * s * (One(g, s) - s) * du)};
  }
  GradValue cdf = (g.Op("erf", {x * M_SQRT1_2}) + 1.0) * 0.5;
  GradValue pdf = g.Op("exp", {x * x * -0.5}) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
  return {G(g) * (cdf + x * pdf)};
}

Grads SiluGrad(GradCtx& g) {
  GradValue x = g.in(0), s = g.Op("sigmoid", {x});
  return {G(g) * s * (x * (One(g, s) - s) + 1.0)};
}

std::vector<GradRow> Rows() {
  return {
      {"neg", {}, {}, [](GradCtx& g) -> Grads { return {-G(g)}; }},
      {"abs",
       {0},
       {},
       [](GradCtx& g) -> Grads { return {G(g) * g.Op("sign", {g.in(0)})}; }},
      {"sign", {}, {}, Zeros},
      {"floor", {}, {}, Zeros},
      {"ceil", {}, {}, Zeros},
      {"round", {}, {}, Zeros},
      {"trunc", {}, {}, Zeros},
      // One pass over the gradient and the output (a compare, a bool tensor
      // and a where before): grad where out > 0.
      {"relu",
       {},
       {0},
       [](GradCtx& g) -> Grads {
         return {g.Op("threshold_backward", {G(g), g.out()})};
       }},
      // As PyTorch: linear in grad_output, constant in the mask's input.
      {"threshold_backward",
       {1},
       {},
       [](GradCtx& g) -> Grads {
         Grads r = Zeros(g);
         if (g.needs(0)) {
           r[0] = g.Op("threshold_backward", {G(g), g.in(1)},
                       {{"threshold", g.attrs().Float("threshold")}});
         }
         return r;
       }},
      {"square",
       {0},
       {},
       [](GradCtx& g) -> Grads { return {G(g) * g.in(0) * 2.0}; }},
      {"exp", {}, {0}, [](GradCtx& g) -> Grads { return {G(g) * g.out()}; }},
      {"log", {0}, {}, [](GradCtx& g) -> Grads { return {G(g) / g.in(0)}; }},
      {"log1p",
       {0},
       {},
       [](GradCtx& g) -> Grads { return {G(g) / (g.in(0) + 1.0)}; }},
      {"expm1",
       {},
       {0},
       [](GradCtx& g) -> Grads { return {G(g) * (g.out() + 1.0)}; }},
      {"sqrt",
       {},
       {0},
       [](GradCtx& g) -> Grads { return {G(g) / (g.out() * 2.0)}; }},
      {"rsqrt",
       {},
       {0},
       [](GradCtx& g) -> Grads {
         return {G(g) * g.out() * g.out() * g.out() * -0.5};
       }},
      {"sin",
       {0},
       {},
       [](GradCtx& g) -> Grads { return {G(g) * g.Op("cos", {g.in(0)})}; }},
      {"cos",
       {0},
       {},
       [](GradCtx& g) -> Grads { return {-G(g) * g.Op("sin", {g.in(0)})}; }},
      {"tanh",
       {},
       {0},
       [](GradCtx& g) -> Grads {
         return {G(g) * (One(g, g.out()) - g.out() * g.out())};
       }},
      {"sigmoid",
       {},
       {0},
       [](GradCtx& g) -> Grads {
         return {G(g) * g.out() * (One(g, g.out()) - g.out())};
       }},
      {"silu", {0}, {}, SiluGrad},
      {"gelu", {0}, {}, GeluGrad},
      {"erf",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         GradValue x = g.in(0);
         return {G(g) * g.Op("exp", {-(x * x)}) * M_2_SQRTPI};
       }},
      {"reciprocal",
       {},
       {0},
       [](GradCtx& g) -> Grads { return {-G(g) * g.out() * g.out()}; }},
      {"clamp", {0}, {}, ClampGrad},
      {"add",
       {},
       {},
       [](GradCtx& g) -> Grads {
         return {G(g), G(g) * g.attrs().Float("alpha")};
       }},
      {"sub",
       {},
       {},
       [](GradCtx& g) -> Grads {
         return {G(g), G(g) * -g.attrs().Float("alpha")};
       }},
      {"mul",
       {0, 1},
       {},
       [](GradCtx& g) -> Grads {
         return {g.needs(0) ? G(g) * g.in(1) : GradValue(),
                 g.needs(1) ? G(g) * g.in(0) : GradValue()};
       }},
      {"div", {0, 1}, {}, DivGrad},
      {"pow", {0, 1}, {0}, PowGrad},
      {"atan2",
       {0, 1},
       {},
       [](GradCtx& g) -> Grads {
         // d/dy atan2(y, x) = x / r2, d/dx = -y / r2 (PyTorch's
         // atan2_backward).
         GradValue y = g.in(0), x = g.in(1);
         GradValue r2 = x * x + y * y;
         return {g.needs(0) ? G(g) * x / r2 : GradValue(),
                 g.needs(1) ? G(g) * -y / r2 : GradValue()};
       }},
      {"maximum", {0, 1}, {}, MaxMinGrad<true>},
      {"minimum", {0, 1}, {}, MaxMinGrad<false>},
      {"remainder",
       {0, 1},
       {},
       [](GradCtx& g) -> Grads {
         return {G(g), g.needs(1)
                           ? -G(g) * g.Op("floor_divide", {g.in(0), g.in(1)})
                           : GradValue()};
       }},
      {"where",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         GradValue z = Zero(g, G(g));
         return {GradValue(), Where(g, g.in(0), G(g), z),
                 Where(g, g.in(0), z, G(g))};
       }},
      {"masked_fill",
       {1},
       {},
       [](GradCtx& g) -> Grads {
         GradValue z = Zero(g, G(g));
         return {Where(g, g.in(1), z, G(g)), GradValue(),
                 Where(g, g.in(1), G(g), z)};
       }},
      {"zero_", {}, {}, Zeros},
      {"fill_",
       {},
       {},
       [](GradCtx& g) -> Grads {
         return {g.ZerosOfInput(0), G(g)};
       }},
      {"copy_",
       {},
       {},
       [](GradCtx& g) -> Grads {
         return {g.ZerosOfInput(0), G(g)};
       }},
  };
}

}  // namespace

std::vector<GradRow> PointwiseGrads() { return Rows(); }

}  // namespace tensord

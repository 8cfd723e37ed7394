// Backward formulas of the reductions and linear algebra (derivatives.h),
// and of the value-selecting scans of scan_ops.cc (cummax/cummin, mode,
// logcumsumexp).
#include <cfloat>
#include <cmath>

#include "runtime/ops/derivatives.h"

namespace tensord {
namespace {

GradValue G(GradCtx& g) { return g.grad(); }

// How many elements each output element reduces.
double Count(GradCtx& g, bool int_dim = false) {
  const Shape& in = g.in_shape(0);
  const int rank = static_cast<int>(in.size());
  if (int_dim ? !g.attrs().Has("dim") : g.attrs().Ints("dim").empty()) {
    return static_cast<double>(NumElements(in));
  }
  std::vector<int64_t> dims = int_dim
                                  ? std::vector<int64_t>{g.attrs().Int("dim")}
                                  : g.attrs().Ints("dim");
  double n = 1;
  for (int64_t d : dims) n *= rank == 0 ? 1 : in[(d % rank + rank) % rank];
  return n;
}

// amax/amin: the gradient goes to the extremal elements, split evenly.
Grads ExtremeGrad(GradCtx& g) {
  GradValue x = g.in(0);
  GradValue mask =
      Cast(g, Cmp(g, "eq", x, Unreduce(g, g.out())), g.in_dtype(0));
  Ints dims = g.attrs().Ints("dim");
  GradValue count = g.Op("sum", {mask}, {{"dim", dims}, {"keepdim", true}});
  return {Unreduce(g, G(g)) * mask / count};
}

double Correction(GradCtx& g) {
  if (g.attrs().Has("correction")) return g.attrs().Float("correction");
  return g.attrs().Bool("unbiased") ? 1.0 : 0.0;
}

GradValue Centered(GradCtx& g) {
  GradValue x = g.in(0);
  Ints dims = g.attrs().Ints("dim");
  return x - g.Op("mean", {x}, {{"dim", dims}, {"keepdim", true}});
}

// prod without dividing by zero (PyTorch's prod_backward): an element's
// gradient is the product of the others in its slice. With p the product
// of the slice's nonzero elements and z its count of zeros, that is p / x
// when z == 0, p at the slice's one zero when z == 1, and 0 otherwise.
Grads ProdGrad(GradCtx& g) {
  GradValue x = g.in(0);
  const DType dt = g.in_dtype(0);
  const Ints dims = g.attrs().Ints("dim");
  const std::map<std::string, AttrValue> keep = {{"dim", dims},
                                                 {"keepdim", true}};
  GradValue is_zero = Cmp(g, "eq", x, Zero(g, x));
  GradValue safe = Where(g, is_zero, g.Num(1, x), x);
  GradValue p = g.Op("prod", {safe}, keep);
  GradValue zeros = g.Op("sum", {Cast(g, is_zero, dt)}, keep);
  GradValue at_zero = Cast(g, Cmp(g, "eq", zeros, g.Num(1, zeros)), dt);
  GradValue elsewhere = Cast(g, Cmp(g, "eq", zeros, Zero(g, zeros)), dt) / safe;
  return {Unreduce(g, G(g)) * p * Where(g, is_zero, at_zero, elsewhere)};
}

Grads NormGrad(GradCtx& g) {
  const double p = g.attrs().Float("p");
  // The 0-"norm" counts nonzeros: piecewise constant, so its gradient is 0.
  if (p == 0) return {g.ZerosOfInput(0)};
  GradValue x = g.in(0), gu = Unreduce(g, G(g)), nu = Unreduce(g, g.out());
  GradValue z = Zero(g, gu);
  GradValue zero_norm = Cmp(g, "eq", nu, Zero(g, nu));
  if (p == 1) return {gu * g.Op("sign", {x})};
  if (std::isinf(p)) {
    GradValue ax = g.Op("abs", {x});
    GradValue mask = Cast(g, Cmp(g, "eq", ax, nu), g.in_dtype(0));
    Ints dims = g.attrs().Ints("dim");
    GradValue count = g.Op("sum", {mask}, {{"dim", dims}, {"keepdim", true}});
    return {gu * g.Op("sign", {x}) * mask / count};
  }
  GradValue d = p == 2 ? gu * x / nu
                       : gu * x *
                             g.Op("pow", {g.Op("abs", {x}), g.Num(p - 2, x)}) /
                             g.Op("pow", {nu, g.Num(p - 1, nu)});
  return {Where(g, zero_norm, z, d)};
}

// Whether `v` is a column-major matrix: a transposed view of a contiguous
// one (unit stride down its rows).
bool ColumnMajor(const GradValue& v) {
  if (!v.value().ok() || !v.value()->defined()) return false;
  const Tensor& t = *v.value();
  return t.ndim() == 2 && t.shape()[0] > 1 && t.shape()[1] > 1 &&
         t.strides()[0] == 1 && t.strides()[1] == t.shape()[0];
}

// matmul with PyTorch's 1-d promotion; batch dims are summed back by the
// engine (Note [Broadcast reduction]).
Grads MatmulGrad(GradCtx& g) {
  GradValue a = g.in(0), b = g.in(1), gr = G(g);
  const size_t ra = g.in_shape(0).size(), rb = g.in_shape(1).size();
  auto tr = [&](const GradValue& t) {
    return g.Op("transpose", {t},
                {{"dim0", int64_t{-1}}, {"dim1", int64_t{-2}}});
  };
  auto unsq = [&](const GradValue& t, int64_t d) {
    return g.Op("unsqueeze", {t}, {{"dim", d}});
  };
  auto sq = [&](const GradValue& t, int64_t d) {
    return g.Op("squeeze", {t}, {{"dim", d}});
  };
  GradValue ga, gb;
  if (ra == 1 && rb == 1) {
    ga = g.needs(0) ? gr * b : GradValue();
    gb = g.needs(1) ? gr * a : GradValue();
  } else if (rb == 1) {
    ga = g.needs(0) ? unsq(gr, -1) * b : GradValue();
    gb = g.needs(1) ? sq(g.Op("matmul", {tr(a), unsq(gr, -1)}), -1)
                    : GradValue();
  } else if (ra == 1) {
    ga = g.needs(0) ? sq(g.Op("matmul", {unsq(gr, -2), tr(b)}), -2)
                    : GradValue();
    gb = g.needs(1) ? unsq(a, -1) * unsq(gr, -2) : GradValue();
  } else if (ra == 2 && rb == 2) {
    // An operand that is a transposed matrix (linear's weight.t()) gets its
    // gradient in the same layout, as PyTorch's mm_mat2_backward does: the
    // transpose back to the leaf is then contiguous and AccumulateGrad
    // keeps it without a copy (15% of an MLP step's daemon CPU went to
    // those copies).
    ga = !g.needs(0)      ? GradValue()
         : ColumnMajor(a) ? tr(g.Op("matmul", {b, tr(gr)}))
                          : g.Op("matmul", {gr, tr(b)});
    gb = !g.needs(1)      ? GradValue()
         : ColumnMajor(b) ? tr(g.Op("matmul", {tr(gr), a}))
                          : g.Op("matmul", {tr(a), gr});
  } else {
    ga = g.needs(0) ? g.Op("matmul", {gr, tr(b)}) : GradValue();
    gb = g.needs(1) ? g.Op("matmul", {tr(a), gr}) : GradValue();
  }
  return {ga, gb};
}

// cummax/cummin (PyTorch's cummaxmin_backward): each running extreme's
// gradient goes to the element it was taken from, summed there.
Grads CumExtremeGrad(GradCtx& g) {
  if (g.in_shape(0).empty()) return {G(g)};
  if (NumElements(g.in_shape(0)) == 0) return {g.ZerosOfInput(0)};
  return {g.Op("scatter_add", {g.ZerosOfInput(0), g.out(1), G(g)},
               {{"dim", g.attrs().Int("dim")}})};
}

// mode (PyTorch's value_selecting_reduction_backward): the gradient goes to
// the index each row chose.
Grads ModeGrad(GradCtx& g) {
  const Shape& in = g.in_shape(0);
  if (in.empty()) return {G(g)};
  if (NumElements(in) == 0) return {g.ZerosOfInput(0)};
  const int64_t rank = static_cast<int64_t>(in.size());
  const int64_t d = (g.attrs().Int("dim") % rank + rank) % rank;
  GradValue grad = G(g), idx = g.out(1);
  if (!g.attrs().Bool("keepdim")) {
    Ints keep(in.begin(), in.end());
    keep[d] = 1;
    grad = g.Op("reshape", {grad}, {{"shape", keep}});
    idx = g.Op("reshape", {idx}, {{"shape", keep}});
  }
  return {g.Op("scatter_add", {g.ZerosOfInput(0), idx, grad}, {{"dim", d}})};
}

// logcumsumexp, PyTorch's logcumsumexp_backward: x_i's gradient is
// sum_{j >= i} g_j exp(x_i - out_j), summed in log space for the positive
// and the negative g_j apart (log|g| where g has that sign, the dtype's
// lowest value elsewhere) by a reversed logcumsumexp.
Grads LogCumSumExpGrad(GradCtx& g) {
  const Shape& in = g.in_shape(0);
  if (in.empty() || NumElements(in) == 0) return {G(g)};
  const int64_t dim = g.attrs().Int("dim");
  const Ints dims = {dim};
  auto reversed = [&](const GradValue& v) {
    GradValue r = g.Op("flip", {v}, {{"dims", dims}});
    r = g.Op("logcumsumexp", {r}, {{"dim", dim}});
    return g.Op("flip", {r}, {{"dims", dims}});
  };
  GradValue grad = G(g), x = g.in(0), out = g.out();
  GradValue lowest =
      g.Num(g.in_dtype(0) == DType::kFloat64 ? -DBL_MAX : -FLT_MAX, grad);
  GradValue zero = Zero(g, grad);
  GradValue log_abs = g.Op("log", {g.Op("abs", {grad})});
  GradValue pos = Where(g, Cmp(g, "gt", grad, zero), log_abs, lowest);
  GradValue neg = Where(g, Cmp(g, "lt", grad, zero), log_abs, lowest);
  return {g.Op("exp", {reversed(pos - out) + x}) -
          g.Op("exp", {reversed(neg - out) + x})};
}

}  // namespace

std::vector<GradRow> ReductionGrads() {
  return {
      {"sum", {}, {}, [](GradCtx& g) -> Grads { return {Unreduce(g, G(g))}; }},
      {"mean",
       {},
       {},
       [](GradCtx& g) -> Grads { return {Unreduce(g, G(g)) / Count(g)}; }},
      {"prod", {0}, {}, ProdGrad},
      {"amax", {0}, {0}, ExtremeGrad},
      {"amin", {0}, {0}, ExtremeGrad},
      {"var",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {Unreduce(g, G(g)) * Centered(g) *
                 (2.0 / (Count(g) - Correction(g)))};
       }},
      {"std",
       {0},
       {0},
       [](GradCtx& g) -> Grads {
         return {Unreduce(g, G(g) / g.out()) * Centered(g) *
                 (1.0 / (Count(g) - Correction(g)))};
       }},
      {"norm", {0}, {0}, NormGrad},
      {"logsumexp",
       {0},
       {0},
       [](GradCtx& g) -> Grads {
         return {Unreduce(g, G(g)) *
                 g.Op("exp", {g.in(0) - Unreduce(g, g.out())})};
       }},
      {"cummax", {}, {1}, CumExtremeGrad},
      {"cummin", {}, {1}, CumExtremeGrad},
      {"mode", {}, {1}, ModeGrad},
      {"logcumsumexp", {0}, {0}, LogCumSumExpGrad},
      {"matmul", {0, 1}, {}, MatmulGrad},
      {"mm", {0, 1}, {}, MatmulGrad},
      {"bmm", {0, 1}, {}, MatmulGrad},
  };
}

}  // namespace tensord

// Backward formulas of the LAPACK rows that the daemon's own autograd
// differentiates (the native clients'; the PyTorch device runs PyTorch's
// formulas on the client instead): linalg_matrix_exp through the
// block-matrix identity and linalg_qr as PyTorch's FunctionsManual.cpp
// writes them; linalg_householder_product and ormqr by reverse mode through
// the product of reflectors, linalg_lstsq's solution for full-rank A as the
// normal equations' solution differentiated (PyTorch differentiates pinv(A)
// B, the same at full rank), and triangular_solve as ATen's
// triangular_solve_backward. G is an output's gradient.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/ops/derivatives.h"

namespace tensord {
namespace {

GradValue T(GradCtx& g, const GradValue& x) {  // x^T of the last two dims
  return g.Op("transpose", {x}, {{"dim0", int64_t{-2}}, {"dim1", int64_t{-1}}});
}
GradValue Mm(GradCtx& g, const GradValue& a, const GradValue& b) {
  return g.Op("matmul", {a, b});
}
GradValue Narrow(GradCtx& g, const GradValue& x, int64_t dim, int64_t start,
                 int64_t length) {
  return g.Op("narrow", {x},
              {{"dim", dim}, {"start", start}, {"length", length}});
}
GradValue Cat(GradCtx& g, const GradValue& a, const GradValue& b, int64_t dim) {
  return g.Op("cat", {a, b}, {{"dim", dim}});
}

// d/dA <G, exp(A)> = exp([[A^T, G], [0, A^T]])[:n, n:] (Mathias 1996; what
// PyTorch's linalg_matrix_exp_differential computes).
Grads MatrixExpGrad(GradCtx& g) {
  const Shape& shape = g.in_shape(0);
  const int64_t n = shape.back(), rank = static_cast<int64_t>(shape.size());
  GradValue at = T(g, g.in(0));
  GradValue top = Cat(g, at, g.grad(), rank - 1);
  GradValue bottom = Cat(g, g.Op("zeros_like", {at}), at, rank - 1);
  GradValue e = g.Op("linalg_matrix_exp", {Cat(g, top, bottom, rank - 2)});
  return {Narrow(g, Narrow(g, e, rank - 2, 0, n), rank - 1, n, n)};
}

// The gradient of A = QR for square or tall A (Q [m, n], R [n, n]):
// M = gR R^T - Q^T gQ, gA = (Q (triu(M) + triu(M, 1)^T) + gQ) R^-T.
GradValue QrGradTall(GradCtx& g, const GradValue& q, const GradValue& r,
                     const GradValue& gq, const GradValue& gr) {
  GradValue m = Mm(g, gr, T(g, r)) - Mm(g, T(g, q), gq);
  GradValue sym =
      g.Op("triu", {m}) + T(g, g.Op("triu", {m}, {{"diagonal", int64_t{1}}}));
  return g.Op("linalg_solve_triangular", {T(g, r), Mm(g, q, sym) + gq},
              {{"upper", false}, {"left", false}});
}

// linalg_qr: tall/square A with mode 'reduced'; wide A (any mode but 'r')
// as A = Q [R1 R2]: R1's square formula with gQ + (Q R2) gR2^T, and Q gR2
// for the columns past m. PyTorch's errors where Q does not determine the
// gradient.
Grads QrGrad(GradCtx& g) {
  const Shape& shape = g.in_shape(0);
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t m = shape[rank - 2], n = shape[rank - 1];
  const std::string& mode = g.attrs().String("mode");
  if (mode == "r") {
    return {GradValue(absl::InvalidArgumentError(
                          "The derivative of linalg.qr depends on Q, which is "
                          "not computed when mode='r'. Please use "
                          "linalg.qr(A, mode='reduced') if you are going to "
                          "differentiate through linalg.qr."),
                      &g)};
  }
  if (mode == "complete" && m > n) {
    return {GradValue(absl::InvalidArgumentError(
                          "The QR decomposition is not differentiable when "
                          "mode='complete' and nrows > ncols."),
                      &g)};
  }
  GradValue q = g.out(0), r = g.out(1), gq = g.grad(0), gr = g.grad(1);
  if (m >= n) return {QrGradTall(g, q, r, gq, gr)};
  GradValue r1 = Narrow(g, r, rank - 1, 0, m);
  GradValue r2 = Narrow(g, r, rank - 1, m, n - m);
  GradValue gr1 = Narrow(g, gr, rank - 1, 0, m);
  GradValue gr2 = Narrow(g, gr, rank - 1, m, n - m);
  GradValue gq1 = gq + Mm(g, Mm(g, q, r2), T(g, gr2));
  return {Cat(g, QrGradTall(g, q, r1, gq1, gr1), Mm(g, q, gr2), rank - 1)};
}

GradValue Solve(GradCtx& g, const GradValue& a, const GradValue& b) {
  return g.Ops("_linalg_solve_ex", {a, b})[0];
}
GradValue Unsqueeze(GradCtx& g, const GradValue& x) {
  return g.Op("unsqueeze", {x}, {{"dim", int64_t{-1}}});
}

// linalg_lstsq's solution X for full-rank A [.., m, n] and B [.., m, k]
// (a vector B as [.., m, 1]); only the solution is differentiable, as in
// PyTorch. Tall (m >= n), X = (A^T A)^-1 A^T B: with Z = (A^T A)^-1 gX and
// the residual r = B - A X, gA = r Z^T - A Z X^T and gB = A Z. Wide, the
// minimum norm X = A^T Y, Y = (A A^T)^-1 B: with W = (A A^T)^-1 A gX,
// gA = Y gX^T - W X^T - Y W^T A and gB = W. Rank-deficient A (where
// PyTorch's pinv formula differs) is not covered.
Grads LstsqGrad(GradCtx& g) {
  const Shape& a_shape = g.in_shape(0);
  const int64_t rank = static_cast<int64_t>(a_shape.size());
  const int64_t m = a_shape[rank - 2], n = a_shape[rank - 1];
  const bool vector = static_cast<int64_t>(g.in_shape(1).size()) == rank - 1;
  GradValue a = g.in(0), b = g.in(1), x = g.out(0), gx = g.grad(0);
  if (vector) {
    b = Unsqueeze(g, b);
    x = Unsqueeze(g, x);
    gx = Unsqueeze(g, gx);
  }
  GradValue ga, gb;
  if (m >= n) {
    GradValue z = Solve(g, Mm(g, T(g, a), a), gx);
    GradValue r = b - Mm(g, a, x);
    ga = Mm(g, r, T(g, z)) - Mm(g, Mm(g, a, z), T(g, x));
    gb = Mm(g, a, z);
  } else {
    GradValue s = Mm(g, a, T(g, a));
    GradValue y = Solve(g, s, b);
    GradValue w = Solve(g, s, Mm(g, a, gx));
    ga = Mm(g, y, T(g, gx)) - Mm(g, w, T(g, x)) - Mm(g, Mm(g, y, T(g, w)), a);
    gb = w;
  }
  if (vector) gb = g.Op("squeeze", {gb}, {{"dim", int64_t{-1}}});
  return {g.needs(0) ? ga : GradValue(), g.needs(1) ? gb : GradValue()};
}

// The identity shaped as `like` ([.., r, c]: ones on its diagonal).
GradValue EyeLike(GradCtx& g, const GradValue& like) {
  GradValue ones = g.Op("ones_like", {like});
  return g.Op("tril", {g.Op("triu", {ones})});
}

// The product of reflectors Q = H_1 ... H_k (r x r), H_i = I - tau_i v_i
// v_i^T with v_i column i of input 0's strict lower triangle and a unit
// diagonal (input 0 [.., r, c], tau input 1 [.., k], k <= c), and the
// gradients of input 0 and tau from Q's gradient `gq` (r x r), by reverse
// mode through the product: gH_i = (H_1 ... H_{i-1})^T gQ (H_{i+1} ...
// H_k)^T, then gv_i = -tau_i (gH_i + gH_i^T) v_i (its strict lower part
// reaches the input) and gtau_i = -v_i^T gH_i v_i. k products of r x r
// matrices each way.
struct Reflectors {
  std::vector<GradValue> v, tau, h;
  GradValue eye;  // [.., r, r]
};

Reflectors BuildReflectors(GradCtx& g, int64_t k) {
  const int64_t rank = static_cast<int64_t>(g.in_shape(0).size());
  GradValue a = g.in(0);
  GradValue v = g.Op("tril", {a}, {{"diagonal", int64_t{-1}}}) + EyeLike(g, a);
  Reflectors r;
  for (int64_t i = 0; i < k; ++i) {
    r.v.push_back(Narrow(g, v, rank - 1, i, 1));  // [.., r, 1]
    r.tau.push_back(g.Op("unsqueeze", {Narrow(g, g.in(1), rank - 2, i, 1)},
                         {{"dim", int64_t{-1}}}));  // [.., 1, 1]
  }
  r.eye = EyeLike(g, Mm(g, r.v[0], T(g, r.v[0])));
  for (int64_t i = 0; i < k; ++i) {
    r.h.push_back(r.eye - r.tau[i] * Mm(g, r.v[i], T(g, r.v[i])));
  }
  return r;
}

Grads ReflectorGrads(GradCtx& g, const Reflectors& r, const GradValue& gq) {
  const Shape& shape = g.in_shape(0);
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t c = shape[rank - 1], k = static_cast<int64_t>(r.h.size());
  // suffix[i] = H_{i+1} ... H_k (suffix[k] = I); the prefix grows below.
  std::vector<GradValue> suffix(k + 1);
  suffix[k] = r.eye;
  for (int64_t i = k - 1; i >= 0; --i) {
    suffix[i] = Mm(g, r.h[i], suffix[i + 1]);
  }
  GradValue prefix = r.eye;
  std::vector<GradValue> gvs, gtaus;
  for (int64_t i = 0; i < k; ++i) {
    GradValue gh = Mm(g, Mm(g, T(g, prefix), gq), T(g, suffix[i + 1]));
    gvs.push_back(-(r.tau[i] * Mm(g, gh + T(g, gh), r.v[i])));
    gtaus.push_back(-Mm(g, Mm(g, T(g, r.v[i]), gh), r.v[i]));  // [.., 1, 1]
    prefix = Mm(g, prefix, r.h[i]);
  }
  if (c > k) {
    gvs.push_back(g.Op("zeros_like", {Narrow(g, g.in(0), rank - 1, k, c - k)}));
  }
  GradValue ga = g.Op("tril", {g.Op("cat", gvs, {{"dim", rank - 1}})},
                      {{"diagonal", int64_t{-1}}});
  GradValue gtau = g.Op("squeeze", {g.Op("cat", gtaus, {{"dim", rank - 1}})},
                        {{"dim", rank - 2}});
  return {g.needs(0) ? ga : GradValue(), g.needs(1) ? gtau : GradValue()};
}

// linalg_householder_product: Q is the first n columns of the product, so
// the product's gradient is [gQ, 0].
Grads HouseholderProductGrad(GradCtx& g) {
  const Shape& shape = g.in_shape(0);
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t m = shape[rank - 2], n = shape[rank - 1];
  const int64_t k = g.in_shape(1).back();
  if (k == 0) return {g.ZerosOfInput(0), g.ZerosOfInput(1)};
  Reflectors r = BuildReflectors(g, k);
  GradValue full = g.grad();
  if (m > n) {
    GradValue pad = g.Op("zeros_like", {Narrow(g, r.eye, rank - 1, n, m - n)});
    full = Cat(g, full, pad, rank - 1);
  }
  return ReflectorGrads(g, r, full);
}

// ormqr(input, tau, C, left, transpose): out = op(Q) C or C op(Q). C's
// gradient is ormqr with op(Q)^T; Q's is gOut C^T, C gOut^T, C^T gOut or
// gOut^T C (left, left transposed, right, right transposed).
Grads OrmqrGrad(GradCtx& g) {
  const bool left = g.attrs().Bool("left");
  const bool transpose = g.attrs().Bool("transpose");
  const int64_t k = g.in_shape(1).back();
  GradValue c = g.in(2), go = g.grad();
  GradValue gc;
  if (g.needs(2)) {
    gc = g.Op("ormqr", {g.in(0), g.in(1), go},
              {{"left", left}, {"transpose", !transpose}});
  }
  if (k == 0 || !(g.needs(0) || g.needs(1))) {
    return {g.needs(0) ? g.ZerosOfInput(0) : GradValue(),
            g.needs(1) ? g.ZerosOfInput(1) : GradValue(), gc};
  }
  GradValue gq = left ? (transpose ? Mm(g, c, T(g, go)) : Mm(g, go, T(g, c)))
                      : (transpose ? Mm(g, T(g, go), c) : Mm(g, T(g, c), go));
  Grads r = ReflectorGrads(g, BuildReflectors(g, k), gq);
  r.push_back(gc);
  return r;
}

// triangular_solve(B, A) -> (X, A): ATen's triangular_solve_backward. gB
// solves with op(A)^T; gA = -gB X^T (-X gB^T with transpose) on A's
// triangle (its strict one with unitriangular), plus cloned_coefficient's
// gradient.
Grads TriangularSolveGrad(GradCtx& g) {
  const bool upper = g.attrs().Bool("upper");
  const bool transpose = g.attrs().Bool("transpose");
  const bool unit = g.attrs().Bool("unitriangular");
  GradValue gb = g.Ops("triangular_solve", {g.grad(0), g.in(1)},
                       {{"upper", upper},
                        {"transpose", !transpose},
                        {"unitriangular", unit}})[0];
  GradValue ga;
  if (g.needs(1)) {
    GradValue x = g.out(0);
    GradValue full = transpose ? -Mm(g, x, T(g, gb)) : -Mm(g, gb, T(g, x));
    const int64_t diagonal = unit ? (upper ? 1 : -1) : 0;
    ga = g.Op(upper ? "triu" : "tril", {full}, {{"diagonal", diagonal}}) +
         g.grad(1);
  }
  return {g.needs(0) ? gb : GradValue(), ga};
}

}  // namespace

std::vector<GradRow> LinalgGrads() {
  return {
      {"linalg_matrix_exp", {0}, {}, MatrixExpGrad},
      {"linalg_qr", {}, {0, 1}, QrGrad},
      {"linalg_lstsq", {0, 1}, {0}, LstsqGrad},
      {"linalg_householder_product", {0, 1}, {}, HouseholderProductGrad},
      {"ormqr", {0, 1, 2}, {}, OrmqrGrad},
      {"triangular_solve", {1}, {0}, TriangularSolveGrad},
  };
}

}  // namespace tensord

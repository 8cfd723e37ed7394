// Backward formulas of the LAPACK rows that the daemon's own autograd
// differentiates (the native clients'; the PyTorch device runs PyTorch's
// formulas on the client instead): linalg_matrix_exp through the
// block-matrix identity and linalg_qr as PyTorch's FunctionsManual.cpp
// writes them; linalg_householder_product by reverse mode through the
// product of reflectors, and linalg_lstsq's solution for full-rank A as the
// normal equations' solution differentiated (PyTorch differentiates pinv(A)
// B, the same at full rank). G is an output's gradient.
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

// linalg_householder_product: Q = (H_1 ... H_k)[:, :n] with H_i = I -
// tau_i v_i v_i^T, v_i column i of the input's strict lower triangle with a
// unit diagonal. Reverse mode through the product: with G = [gQ, 0] (m x
// m), gH_i = (H_1 ... H_{i-1})^T G (H_{i+1} ... H_k)^T, then gv_i = -tau_i
// (gH_i + gH_i^T) v_i (its strict lower part reaches the input) and gtau_i
// = -v_i^T gH_i v_i. k products of m x m matrices each way.
Grads HouseholderProductGrad(GradCtx& g) {
  const Shape& shape = g.in_shape(0);
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t m = shape[rank - 2], n = shape[rank - 1];
  const int64_t k = g.in_shape(1).back();
  if (k == 0) return {g.ZerosOfInput(0), g.ZerosOfInput(1)};
  GradValue a = g.in(0), tau = g.in(1);
  GradValue v = g.Op("tril", {a}, {{"diagonal", int64_t{-1}}}) + EyeLike(g, a);
  std::vector<GradValue> vs, taus, hs;
  for (int64_t i = 0; i < k; ++i) {
    vs.push_back(Narrow(g, v, rank - 1, i, 1));  // [.., m, 1]
    taus.push_back(g.Op("unsqueeze", {Narrow(g, tau, rank - 2, i, 1)},
                        {{"dim", int64_t{-1}}}));  // [.., 1, 1]
  }
  GradValue eye = EyeLike(g, Mm(g, vs[0], T(g, vs[0])));  // [.., m, m]
  for (int64_t i = 0; i < k; ++i) {
    hs.push_back(eye - taus[i] * Mm(g, vs[i], T(g, vs[i])));
  }
  GradValue full = g.grad();
  if (m > n) {
    full =
        Cat(g, full, g.Op("zeros_like", {Narrow(g, eye, rank - 1, n, m - n)}),
            rank - 1);
  }
  // suffix[i] = H_{i+1} ... H_k (suffix[k] = I); the prefix grows below.
  std::vector<GradValue> suffix(k + 1);
  suffix[k] = eye;
  for (int64_t i = k - 1; i >= 0; --i) suffix[i] = Mm(g, hs[i], suffix[i + 1]);
  GradValue prefix = eye;
  std::vector<GradValue> gvs, gtaus;
  for (int64_t i = 0; i < k; ++i) {
    GradValue gh = Mm(g, Mm(g, T(g, prefix), full), T(g, suffix[i + 1]));
    gvs.push_back(-(taus[i] * Mm(g, gh + T(g, gh), vs[i])));
    gtaus.push_back(-Mm(g, Mm(g, T(g, vs[i]), gh), vs[i]));  // [.., 1, 1]
    prefix = Mm(g, prefix, hs[i]);
  }
  if (n > k)
    gvs.push_back(g.Op("zeros_like", {Narrow(g, a, rank - 1, k, n - k)}));
  GradValue ga = g.Op("tril", {g.Op("cat", gvs, {{"dim", rank - 1}})},
                      {{"diagonal", int64_t{-1}}});
  GradValue gtau = g.Op("squeeze", {g.Op("cat", gtaus, {{"dim", rank - 1}})},
                        {{"dim", rank - 2}});
  return {g.needs(0) ? ga : GradValue(), g.needs(1) ? gtau : GradValue()};
}

}  // namespace

std::vector<GradRow> LinalgGrads() {
  return {
      {"linalg_matrix_exp", {0}, {}, MatrixExpGrad},
      {"linalg_qr", {}, {0, 1}, QrGrad},
      {"linalg_lstsq", {0, 1}, {0}, LstsqGrad},
      {"linalg_householder_product", {0, 1}, {}, HouseholderProductGrad},
  };
}

}  // namespace tensord

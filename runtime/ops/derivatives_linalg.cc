// Backward formulas of the LAPACK rows that the daemon's own autograd
// differentiates (the native clients'; the PyTorch device runs PyTorch's
// formulas on the client instead), as PyTorch's FunctionsManual.cpp writes
// them: linalg_matrix_exp through the block-matrix identity and linalg_qr
// (linalg_qr_backward). G is an output's gradient.
#include <cstdint>
#include <string>

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

}  // namespace

std::vector<GradRow> LinalgGrads() {
  return {
      {"linalg_matrix_exp", {0}, {}, MatrixExpGrad},
      {"linalg_qr", {}, {0, 1}, QrGrad},
  };
}

}  // namespace tensord

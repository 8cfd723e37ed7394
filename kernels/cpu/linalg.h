// Dense linear algebra on LAPACK (OpenBLAS): LU, solves from an LU or a
// triangular matrix, inverse, Cholesky, symmetric eigendecomposition and SVD,
// each batched over the leading dims, with PyTorch's (ATen's) output
// conventions.
//
// Contract: every view is C-contiguous (row-major), float32 or float64 for
// the matrices, int32 for pivots and info; a matrix view is [..., rows,
// cols] and the leading dims are one batch (the ops layer broadcasts).
// Each matrix is copied to a column-major scratch for LAPACK and back, so
// inputs are never written. Pivots are LAPACK's (1-based, as PyTorch
// returns them); info is LAPACK's per matrix (0: success; k > 0: the k-th
// pivot is zero, the k-th leading minor is not positive definite, or the
// eigen/singular solver did not converge). Matrices are at most 2^31 - 1
// rows and columns (LAPACK's int); INVALID_ARGUMENT beyond.
#ifndef TENSORD_KERNELS_CPU_LINALG_H_
#define TENSORD_KERNELS_CPU_LINALG_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// LU with partial pivoting of a [.., m, n]: lu [.., m, n] (L below the
// diagonal, unit diagonal implied, U on and above), pivots [.., min(m, n)],
// info [..]. With `of_transpose` (square a only) factors a^T instead, as
// ATen does for contiguous inputs of det and slogdet.
absl::Status LuFactor(const StridedView& a, bool of_transpose,
                      const StridedView& lu, const StridedView& pivots,
                      const StridedView& info);

// x = A^-1 b (left) or b A^-1 (right), A^H for A with `adjoint`, from A's
// lu [.., n, n] and pivots [.., n]; b and x [.., n, k] (left) or [.., k, n]
// (right), one batch with lu. A pivot outside 1..n (pivots are data)
// reads as no interchange rather than indexing out of bounds.
absl::Status LuSolve(const StridedView& lu, const StridedView& pivots,
                     const StridedView& b, bool left, bool adjoint,
                     const StridedView& x);

// x = op(A)^-1 b (left) or b op(A)^-1 for triangular a [.., n, n] (its
// upper or lower triangle read, a unit diagonal assumed with
// `unitriangular`), op(A) = A^T with `transpose`, else A; b and x [.., n, k]
// (left) or [.., k, n], one batch with a (BLAS trsm).
absl::Status TriangularSolve(const StridedView& a, const StridedView& b,
                             bool upper, bool left, bool transpose,
                             bool unitriangular, const StridedView& x);

// inv = a^-1 for a [.., n, n], info [..] (of the LU of a, as ATen's); a
// singular matrix leaves inv unspecified (inf/NaN, as ATen's).
absl::Status Inverse(const StridedView& a, const StridedView& inv,
                     const StridedView& info);

// The Cholesky factor of a [.., n, n] from its lower (upper) triangle: out =
// L (U = L^H) with the other triangle zero, info [..].
absl::Status Cholesky(const StridedView& a, bool upper, const StridedView& out,
                      const StridedView& info);

// From an LU and its pivots: sign [..] (-1, 0 or 1) and `value` [..] =
// log|det| (`log`) or det.
absl::Status LuDeterminant(const StridedView& lu, const StridedView& pivots,
                           bool log, const StridedView* sign,
                           const StridedView& value);

// Eigenvalues (ascending) [.., n] of symmetric a [.., n, n] read from its
// lower (upper) triangle, and with `vectors` non-null the orthonormal
// eigenvectors as its columns [.., n, n]. INVALID_ARGUMENT when the solver
// does not converge (ATen raises too).
absl::Status Eigh(const StridedView& a, bool upper, const StridedView& values,
                  const StridedView* vectors);

// The SVD a = u diag(s) vh of a [.., m, n] (k = min(m, n)): s [.., k]
// descending; with u and vh non-null also u [.., m, k] and vh [.., k, n],
// or [.., m, m] and [.., n, n] with `full_matrices`. INVALID_ARGUMENT when
// the solver does not converge (ATen raises too).
absl::Status Svd(const StridedView& a, bool full_matrices, const StridedView* u,
                 const StridedView& s, const StridedView* vh);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_LINALG_H_

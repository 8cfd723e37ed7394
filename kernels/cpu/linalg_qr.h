// The QR family and least squares on LAPACK (OpenBLAS), batched over the
// leading dims, with ATen's output conventions: geqrf's compact form
// (Householder vectors below R's diagonal, their scales in tau), the
// explicit Q of linalg_qr and linalg_householder_product (orgqr), products
// with the implicit Q (ormqr), and linalg_lstsq's four CPU drivers.
//
// Contract as linalg.h's: every view C-contiguous (row-major), float32 or
// float64, [..., rows, cols] matrices whose leading dims are one batch (the
// ops layer broadcasts and validates shapes); inputs are never written;
// matrices are at most 2^31 - 1 a side (INVALID_ARGUMENT beyond).
#ifndef TENSORD_KERNELS_CPU_LINALG_QR_H_
#define TENSORD_KERNELS_CPU_LINALG_QR_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// a [.., m, n] = QR in LAPACK's compact form (geqrf): qr [.., m, n], tau
// [.., min(m, n)].
absl::Status Geqrf(const StridedView& a, const StridedView& qr,
                   const StridedView& tau);

// The first n columns of H_1 ... H_k for the Householder vectors in a [..,
// m, n] (m >= n) and their scales tau [.., k] (k <= n): q [.., m, n]
// (orgqr).
absl::Status HouseholderProduct(const StridedView& a, const StridedView& tau,
                                const StridedView& q);

// out = op(Q) c (left) or c op(Q), op(Q) = Q^T with `transpose`, for Q =
// H_1 ... H_k given by a [.., r, >= k] (r: c's rows when left, else its
// columns) and tau [.., k]; c and out [.., m, n] (ormqr).
absl::Status Ormqr(const StridedView& a, const StridedView& tau,
                   const StridedView& c, bool left, bool transpose,
                   const StridedView& out);

enum class QrMode { kReduced, kComplete, kR };

// a = QR for a [.., m, n], k = min(m, n): reduced q [.., m, k] and r [.., k,
// n]; complete q [.., m, m] and r [.., m, n]; kR only r [.., k, n] (q
// untouched).
absl::Status Qr(const StridedView& a, QrMode mode, const StridedView& q,
                const StridedView& r);

enum class LstsqDriver { kGels, kGelsy, kGelsd, kGelss };

// The least squares solution of a x = b for a [.., m, n] and b [.., m, k]
// (one batch): solution [.., n, k]. Where non-null: residuals [.., k] (the
// squared norms of the rows n..m-1 of LAPACK's output: the residuals of
// gels, gelsd and gelss for m > n at full rank), rank int64 [..] (gelsy,
// gelsd, gelss), singular_values [.., min(m, n)] (gelsd, gelss). rcond: the
// drivers' cut-off on singular values relative to the largest (gels takes
// none). INVALID_ARGUMENT when gels meets a rank-deficient matrix or an SVD
// does not converge (ATen raises both).
absl::Status Lstsq(const StridedView& a, const StridedView& b,
                   LstsqDriver driver, double rcond,
                   const StridedView& solution, const StridedView* residuals,
                   const StridedView* rank, const StridedView* singular_values);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_LINALG_QR_H_

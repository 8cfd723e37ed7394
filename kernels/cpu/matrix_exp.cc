// exp(A) by scaling and squaring with the [13/13] Pade approximant (see
// matrix_exp.h). Row-major throughout: the approximant r = q^-1 p is solved
// as LAPACK's column-major q^T y = p^T, whose y read row-major is p q^-1 =
// q^-1 p (p and q are polynomials in A, so they commute).
#include "kernels/cpu/matrix_exp.h"

#include <cblas-openblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/lapack.h"
#include "kernels/cpu/lapack_layout.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cpu {
namespace {

using namespace lapack_layout;  // NOLINT: the shared layout helpers

// Higham's b_0..b_13 and theta_13 (the largest 1-norm the approximant
// takes to double precision without scaling).
constexpr double kPade13[14] = {
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
    1187353796428800.0,  129060195264000.0,   10559470521600.0,
    670442572800.0,      33522128640.0,       1323241920.0,
    40840800.0,          960960.0,            16380.0,
    182.0,               1.0};
constexpr double kTheta13 = 5.371920351148152;

// c = a b for n x n row-major matrices.
void Mul(const double* a, const double* b, double* c, int n) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b,
              n, 0.0, c, n);
}

double OneNorm(const std::vector<double>& a, int n) {
  double best = 0;
  for (int j = 0; j < n; ++j) {
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::abs(a[int64_t{i} * n + j]);
    if (!(sum <= best)) best = sum;  // NaN wins
  }
  return best;
}

// exp(a) into `a` (n x n row-major, float64); `scratch` holds 7 matrices.
void ExpInPlace(std::vector<double>& a, int n, std::vector<double>& scratch) {
  const int64_t nn = int64_t{n} * n;
  const double norm = OneNorm(a, n);
  if (!std::isfinite(norm)) {
    std::fill(a.begin(), a.end(), std::numeric_limits<double>::quiet_NaN());
    return;
  }
  const int s = norm > kTheta13
                    ? static_cast<int>(std::ceil(std::log2(norm / kTheta13)))
                    : 0;
  const double scale = std::ldexp(1.0, -s);
  for (double& v : a) v *= scale;
  double* a2 = scratch.data();
  double* a4 = a2 + nn;
  double* a6 = a4 + nn;
  double* u = a6 + nn;
  double* v = u + nn;
  double* t = v + nn;
  double* t2 = t + nn;
  Mul(a.data(), a.data(), a2, n);
  Mul(a2, a2, a4, n);
  Mul(a2, a4, a6, n);
  const double* b = kPade13;
  for (int64_t i = 0; i < nn; ++i) {  // the inner A6 factors
    t[i] = b[13] * a6[i] + b[11] * a4[i] + b[9] * a2[i];
    t2[i] = b[12] * a6[i] + b[10] * a4[i] + b[8] * a2[i];
  }
  Mul(a6, t, u, n);  // u = A6 t + b7 A6 + b5 A4 + b3 A2 + b1 I, then A u
  Mul(a6, t2, v, n);
  for (int64_t i = 0; i < nn; ++i) {
    u[i] += b[7] * a6[i] + b[5] * a4[i] + b[3] * a2[i];
    v[i] += b[6] * a6[i] + b[4] * a4[i] + b[2] * a2[i];
  }
  for (int i = 0; i < n; ++i) {
    u[int64_t{i} * n + i] += b[1];
    v[int64_t{i} * n + i] += b[0];
  }
  Mul(a.data(), u, t, n);  // t = U
  for (int64_t i = 0; i < nn; ++i) {
    a[i] = v[i] + t[i];   // p = V + U
    t2[i] = v[i] - t[i];  // q = V - U
  }
  std::vector<int> piv(n);
  int info = 0;
  lapack::Getrf(n, n, t2, n, piv.data(), &info);
  lapack::Getrs('N', n, n, t2, n, piv.data(), a.data(), n, &info);
  for (int i = 0; i < s; ++i) {  // square back
    Mul(a.data(), a.data(), t, n);
    std::copy(t, t + nn, a.begin());
  }
}

template <typename T>
absl::Status MatrixExpT(const StridedView& a, const StridedView& out) {
  TD_ASSIGN_OR_RETURN(Mats m, AsMats(a, "linalg.matrix_exp"));
  const int n = m.rows;
  if (n == 0) return absl::OkStatus();
  std::vector<double> w(m.size()), scratch(7 * m.size());
  for (int64_t b = 0; b < m.batch; ++b) {
    const T* src = a.ptr<T>() + b * m.size();
    std::copy(src, src + m.size(), w.begin());
    ExpInPlace(w, n, scratch);
    std::copy(w.begin(), w.end(), out.ptr<T>() + b * m.size());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MatrixExp(const StridedView& a, const StridedView& out) {
  return ForFloat(a, "linalg.matrix_exp",
                  [&](auto t) { return MatrixExpT<decltype(t)>(a, out); });
}

}  // namespace cpu
}  // namespace tensord

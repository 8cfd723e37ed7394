// LAPACK calls for the linalg rows (contract in linalg.h). Each matrix is
// copied into a column-major scratch (a transposing copy of the row-major
// input) and the results copied back, one matrix at a time: the batch loop
// is serial and OpenBLAS parallelises inside a factorisation where that
// pays (large matrices).
#include "kernels/cpu/linalg.h"

#include <cblas-openblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "kernels/cpu/lapack.h"
#include "kernels/cpu/lapack_layout.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cpu {
namespace {

using namespace lapack_layout;  // NOLINT: the shared layout helpers

template <typename T>
absl::Status LuFactorT(const StridedView& a, bool of_transpose,
                       const StridedView& lu, const StridedView& pivots,
                       const StridedView& info) {
  TD_ASSIGN_OR_RETURN(Mats m, AsMats(a, "linalg.lu_factor"));
  const int k = std::min(m.rows, m.cols);
  std::vector<T> work(m.size());
  for (int64_t b = 0; b < m.batch; ++b) {
    const T* src = a.ptr<T>() + b * m.size();
    if (of_transpose) {  // square: the row-major memory is a^T column-major
      std::copy(src, src + m.size(), work.data());
    } else {
      ToColMajor(src, m.rows, m.cols, work.data());
    }
    int status = 0;
    lapack::Getrf(m.rows, m.cols, work.data(), std::max(1, m.rows),
                  pivots.ptr<int32_t>() + b * k, &status);
    FromColMajor(work.data(), m.rows, m.cols, lu.ptr<T>() + b * m.size());
    info.ptr<int32_t>()[b] = status;
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status LuSolveT(const StridedView& lu, const StridedView& pivots,
                      const StridedView& b, bool left, bool adjoint,
                      const StridedView& x) {
  TD_ASSIGN_OR_RETURN(Mats a, AsMats(lu, "linalg.lu_solve"));
  TD_ASSIGN_OR_RETURN(Mats rhs, AsMats(b, "linalg.lu_solve"));
  const int n = a.rows;
  const int k = left ? rhs.cols : rhs.rows;
  if (n == 0 || k == 0) return absl::OkStatus();
  // Right: x A = b is A^T x^T = b^T, and b's row-major memory is b^T
  // column-major, so it needs no copy; the transposes swap 'N' and 'T'.
  const char trans = left != adjoint ? 'N' : 'T';
  std::vector<T> lu_work(a.size()), x_work(int64_t{n} * k);
  std::vector<int> piv(n);
  for (int64_t i = 0; i < a.batch; ++i) {
    ToColMajor(lu.ptr<T>() + i * a.size(), n, n, lu_work.data());
    // Pivots are data: one outside 1..n (LAPACK would index out of bounds)
    // reads as no interchange.
    const int32_t* given = pivots.ptr<int32_t>() + i * n;
    for (int r = 0; r < n; ++r) {
      piv[r] = given[r] >= 1 && given[r] <= n ? given[r] : r + 1;
    }
    const T* src = b.ptr<T>() + i * rhs.size();
    if (left) {
      ToColMajor(src, n, k, x_work.data());
    } else {
      std::copy(src, src + rhs.size(), x_work.data());
    }
    int status = 0;
    lapack::Getrs(trans, n, k, lu_work.data(), n, piv.data(), x_work.data(), n,
                  &status);
    T* dst = x.ptr<T>() + i * rhs.size();
    if (left) {
      FromColMajor(x_work.data(), n, k, dst);
    } else {
      std::copy(x_work.begin(), x_work.end(), dst);
    }
  }
  return absl::OkStatus();
}

// Row-major trsm straight on the operands: no column-major copies.
template <typename T>
absl::Status TriangularSolveT(const StridedView& a, const StridedView& b,
                              bool upper, bool left, bool transpose,
                              bool unitriangular, const StridedView& x) {
  TD_ASSIGN_OR_RETURN(Mats m, AsMats(a, "linalg.solve_triangular"));
  TD_ASSIGN_OR_RETURN(Mats rhs, AsMats(b, "linalg.solve_triangular"));
  const int n = m.rows;
  for (int64_t i = 0; i < m.batch; ++i) {
    const T* src = b.ptr<T>() + i * rhs.size();
    T* dst = x.ptr<T>() + i * rhs.size();
    std::copy(src, src + rhs.size(), dst);
    if (rhs.size() == 0) continue;
    const auto side = left ? CblasLeft : CblasRight;
    const auto uplo = upper ? CblasUpper : CblasLower;
    const auto diag = unitriangular ? CblasUnit : CblasNonUnit;
    const auto trans = transpose ? CblasTrans : CblasNoTrans;
    const T* pa = a.ptr<T>() + i * m.size();
    if constexpr (std::is_same_v<T, double>) {
      cblas_dtrsm(CblasRowMajor, side, uplo, trans, diag, rhs.rows, rhs.cols,
                  1.0, pa, std::max(1, n), dst, rhs.cols);
    } else {
      cblas_strsm(CblasRowMajor, side, uplo, trans, diag, rhs.rows, rhs.cols,
                  1.0f, pa, std::max(1, n), dst, rhs.cols);
    }
  }
  return absl::OkStatus();
}

// inv = a^-1 as getrs(getrf(a), I): ATen's LU of a itself (its info).
template <typename T>
absl::Status InverseT(const StridedView& a, const StridedView& inv,
                      const StridedView& info) {
  TD_ASSIGN_OR_RETURN(Mats m, AsMats(a, "linalg.inv"));
  const int n = m.rows;
  std::vector<T> work(m.size()), x(m.size());
  std::vector<int> piv(n);
  for (int64_t b = 0; b < m.batch; ++b) {
    ToColMajor(a.ptr<T>() + b * m.size(), n, n, work.data());
    int status = 0;
    lapack::Getrf(n, n, work.data(), std::max(1, n), piv.data(), &status);
    info.ptr<int32_t>()[b] = status;
    std::fill(x.begin(), x.end(), T(0));
    for (int i = 0; i < n; ++i) x[int64_t{i} * n + i] = T(1);
    if (n > 0) {
      int solve_status = 0;
      lapack::Getrs('N', n, n, work.data(), n, piv.data(), x.data(), n,
                    &solve_status);
    }
    FromColMajor(x.data(), n, n, inv.ptr<T>() + b * m.size());
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status CholeskyT(const StridedView& a, bool upper, const StridedView& out,
                       const StridedView& info) {
  TD_ASSIGN_OR_RETURN(Mats m, AsMats(a, "linalg.cholesky"));
  const int n = m.rows;
  std::vector<T> work(m.size());
  for (int64_t b = 0; b < m.batch; ++b) {
    ToColMajor(a.ptr<T>() + b * m.size(), n, n, work.data());
    int status = 0;
    lapack::Potrf(upper ? 'U' : 'L', n, work.data(), std::max(1, n), &status);
    info.ptr<int32_t>()[b] = status;
    for (int j = 0; j < n; ++j) {  // column j: zero the other triangle
      for (int i = 0; i < n; ++i) {
        if (upper ? i > j : i < j) work[i + int64_t{j} * n] = T(0);
      }
    }
    FromColMajor(work.data(), n, n, out.ptr<T>() + b * m.size());
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status LuDeterminantT(const StridedView& lu, const StridedView& pivots,
                            bool log, const StridedView* sign,
                            const StridedView& value) {
  TD_ASSIGN_OR_RETURN(Mats m, AsMats(lu, "linalg.det"));
  const int n = m.rows;
  for (int64_t b = 0; b < m.batch; ++b) {
    const T* u = lu.ptr<T>() + b * m.size();
    const int32_t* piv = pivots.ptr<int32_t>() + b * n;
    T parity = T(1), prod = T(1), log_abs = T(0);
    for (int i = 0; i < n; ++i) {
      if (piv[i] != i + 1) parity = -parity;
    }
    T s = parity;
    for (int i = 0; i < n; ++i) {
      const T d = u[int64_t{i} * n + i];
      prod *= d;
      s *= d > T(0) ? T(1) : d < T(0) ? T(-1) : d == T(0) ? T(0) : d;
      log_abs += std::log(std::abs(d));
    }
    if (sign != nullptr) sign->ptr<T>()[b] = s;
    value.ptr<T>()[b] = log ? log_abs : parity * prod;
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status EighT(const StridedView& a, bool upper, const StridedView& values,
                   const StridedView* vectors) {
  TD_ASSIGN_OR_RETURN(Mats m, AsMats(a, "linalg.eigh"));
  const int n = m.rows;
  if (n == 0) return absl::OkStatus();
  const char jobz = vectors != nullptr ? 'V' : 'N', uplo = upper ? 'U' : 'L';
  std::vector<T> work_a(m.size());
  T lwork_query = 0;
  int liwork_query = 0, status = 0;
  lapack::Syevd(jobz, uplo, n, work_a.data(), n, values.ptr<T>(), &lwork_query,
                -1, &liwork_query, -1, &status);
  const int lwork = std::max(1, static_cast<int>(lwork_query));
  const int liwork = std::max(1, liwork_query);
  std::vector<T> work(lwork);
  std::vector<int> iwork(liwork);
  for (int64_t b = 0; b < m.batch; ++b) {
    ToColMajor(a.ptr<T>() + b * m.size(), n, n, work_a.data());
    lapack::Syevd(jobz, uplo, n, work_a.data(), n, values.ptr<T>() + b * n,
                  work.data(), lwork, iwork.data(), liwork, &status);
    if (status != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "linalg.eigh: the algorithm failed to converge because the input "
          "matrix is ill-conditioned or has too many repeated eigenvalues "
          "(error code: ",
          status, ")"));
    }
    if (vectors != nullptr) {
      FromColMajor(work_a.data(), n, n, vectors->ptr<T>() + b * m.size());
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status SvdT(const StridedView& a, bool full_matrices,
                  const StridedView* u, const StridedView& s,
                  const StridedView* vh) {
  TD_ASSIGN_OR_RETURN(Mats m, AsMats(a, "linalg.svd"));
  const int k = std::min(m.rows, m.cols);
  const bool uv = u != nullptr && vh != nullptr;
  const int u_cols = full_matrices ? m.rows : k;
  const int vh_rows = full_matrices ? m.cols : k;
  const int64_t u_size = int64_t{m.rows} * u_cols;
  const int64_t vh_size = int64_t{vh_rows} * m.cols;
  if (k == 0) {  // nothing to factor; full U and Vh are identities
    if (!uv) return absl::OkStatus();
    for (int64_t b = 0; b < m.batch; ++b) {
      T* pu = u->ptr<T>() + b * u_size;
      T* pv = vh->ptr<T>() + b * vh_size;
      std::fill(pu, pu + u_size, T(0));
      std::fill(pv, pv + vh_size, T(0));
      for (int i = 0; i < std::min(m.rows, u_cols); ++i)
        pu[int64_t{i} * u_cols + i] = T(1);
      for (int i = 0; i < std::min(vh_rows, m.cols); ++i)
        pv[int64_t{i} * m.cols + i] = T(1);
    }
    return absl::OkStatus();
  }
  const char jobz = !uv ? 'N' : full_matrices ? 'A' : 'S';
  std::vector<T> work_a(m.size());
  std::vector<T> work_u(uv ? u_size : 1), work_vt(uv ? vh_size : 1);
  const int ldu = std::max(1, m.rows), ldvt = std::max(1, vh_rows);
  std::vector<int> iwork(8 * int64_t{k});
  T lwork_query = 0;
  int status = 0;
  lapack::Gesdd(jobz, m.rows, m.cols, work_a.data(), ldu, s.ptr<T>(),
                work_u.data(), ldu, work_vt.data(), ldvt, &lwork_query, -1,
                iwork.data(), &status);
  const int lwork = std::max(1, static_cast<int>(lwork_query));
  std::vector<T> work(lwork);
  for (int64_t b = 0; b < m.batch; ++b) {
    ToColMajor(a.ptr<T>() + b * m.size(), m.rows, m.cols, work_a.data());
    lapack::Gesdd(jobz, m.rows, m.cols, work_a.data(), ldu, s.ptr<T>() + b * k,
                  work_u.data(), ldu, work_vt.data(), ldvt, work.data(), lwork,
                  iwork.data(), &status);
    if (status != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "linalg.svd: the algorithm failed to converge because the input "
          "matrix is ill-conditioned or has too many repeated singular "
          "values (error code: ",
          status, ")"));
    }
    if (uv) {
      FromColMajor(work_u.data(), m.rows, u_cols, u->ptr<T>() + b * u_size);
      FromColMajor(work_vt.data(), vh_rows, m.cols, vh->ptr<T>() + b * vh_size);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LuFactor(const StridedView& a, bool of_transpose,
                      const StridedView& lu, const StridedView& pivots,
                      const StridedView& info) {
  return ForFloat(a, "linalg.lu_factor", [&](auto t) {
    return LuFactorT<decltype(t)>(a, of_transpose, lu, pivots, info);
  });
}

absl::Status LuSolve(const StridedView& lu, const StridedView& pivots,
                     const StridedView& b, bool left, bool adjoint,
                     const StridedView& x) {
  return ForFloat(lu, "linalg.lu_solve", [&](auto t) {
    return LuSolveT<decltype(t)>(lu, pivots, b, left, adjoint, x);
  });
}

absl::Status TriangularSolve(const StridedView& a, const StridedView& b,
                             bool upper, bool left, bool transpose,
                             bool unitriangular, const StridedView& x) {
  return ForFloat(a, "linalg.solve_triangular", [&](auto t) {
    return TriangularSolveT<decltype(t)>(a, b, upper, left, transpose,
                                         unitriangular, x);
  });
}

absl::Status Inverse(const StridedView& a, const StridedView& inv,
                     const StridedView& info) {
  return ForFloat(a, "linalg.inv",
                  [&](auto t) { return InverseT<decltype(t)>(a, inv, info); });
}

absl::Status Cholesky(const StridedView& a, bool upper, const StridedView& out,
                      const StridedView& info) {
  return ForFloat(a, "linalg.cholesky", [&](auto t) {
    return CholeskyT<decltype(t)>(a, upper, out, info);
  });
}

absl::Status LuDeterminant(const StridedView& lu, const StridedView& pivots,
                           bool log, const StridedView* sign,
                           const StridedView& value) {
  return ForFloat(lu, "linalg.det", [&](auto t) {
    return LuDeterminantT<decltype(t)>(lu, pivots, log, sign, value);
  });
}

absl::Status Eigh(const StridedView& a, bool upper, const StridedView& values,
                  const StridedView* vectors) {
  return ForFloat(a, "linalg.eigh", [&](auto t) {
    return EighT<decltype(t)>(a, upper, values, vectors);
  });
}

absl::Status Svd(const StridedView& a, bool full_matrices, const StridedView* u,
                 const StridedView& s, const StridedView* vh) {
  return ForFloat(a, "linalg.svd", [&](auto t) {
    return SvdT<decltype(t)>(a, full_matrices, u, s, vh);
  });
}

}  // namespace cpu
}  // namespace tensord

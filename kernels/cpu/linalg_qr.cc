// LAPACK calls for the QR rows and least squares (contract in linalg_qr.h).
// As linalg.cc: each matrix is copied into a column-major scratch and its
// results back, one matrix at a time (OpenBLAS parallelises inside a
// factorisation); workspaces are sized once per call by LAPACK's query.
#include "kernels/cpu/linalg_qr.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/lapack.h"
#include "kernels/cpu/lapack_layout.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cpu {
namespace {

using namespace lapack_layout;  // NOLINT: the shared layout helpers

template <typename T>
absl::Status GeqrfT(const StridedView& a, const StridedView& qr,
                    const StridedView& tau) {
  TD_ASSIGN_OR_RETURN(Mats m, AsMats(a, "geqrf"));
  const int k = std::min(m.rows, m.cols), ld = std::max(1, m.rows);
  if (k == 0) return absl::OkStatus();  // qr is empty too
  std::vector<T> w(m.size());
  T query = 0;
  int info = 0;
  lapack::Geqrf(m.rows, m.cols, w.data(), ld, tau.ptr<T>(), &query, -1, &info);
  std::vector<T> work(WorkSize(query));
  for (int64_t b = 0; b < m.batch; ++b) {
    ToColMajor(a.ptr<T>() + b * m.size(), m.rows, m.cols, w.data());
    lapack::Geqrf(m.rows, m.cols, w.data(), ld, tau.ptr<T>() + b * k,
                  work.data(), static_cast<int>(work.size()), &info);
    FromColMajor(w.data(), m.rows, m.cols, qr.ptr<T>() + b * m.size());
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status HouseholderProductT(const StridedView& a, const StridedView& tau,
                                 const StridedView& q) {
  TD_ASSIGN_OR_RETURN(Mats m, AsMats(a, "linalg.householder_product"));
  const int k = static_cast<int>(tau.sizes[tau.ndim - 1]);
  const int ld = std::max(1, m.rows);
  if (m.size() == 0) return absl::OkStatus();
  std::vector<T> w(m.size());
  T query = 0;
  int info = 0;
  lapack::Orgqr(m.rows, m.cols, k, w.data(), ld, tau.ptr<T>(), &query, -1,
                &info);
  std::vector<T> work(WorkSize(query));
  for (int64_t b = 0; b < m.batch; ++b) {
    ToColMajor(a.ptr<T>() + b * m.size(), m.rows, m.cols, w.data());
    lapack::Orgqr(m.rows, m.cols, k, w.data(), ld, tau.ptr<T>() + b * k,
                  work.data(), static_cast<int>(work.size()), &info);
    FromColMajor(w.data(), m.rows, m.cols, q.ptr<T>() + b * m.size());
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status OrmqrT(const StridedView& a, const StridedView& tau,
                    const StridedView& c, bool left, bool transpose,
                    const StridedView& out) {
  TD_ASSIGN_OR_RETURN(Mats h, AsMats(a, "ormqr"));
  TD_ASSIGN_OR_RETURN(Mats cm, AsMats(c, "ormqr"));
  const int k = static_cast<int>(tau.sizes[tau.ndim - 1]);
  const int ldc = std::max(1, cm.rows), lda = std::max(1, h.rows);
  const char side = left ? 'L' : 'R', trans = transpose ? 'T' : 'N';
  if (cm.size() == 0) return absl::OkStatus();
  if (k == 0) {  // Q = I
    std::copy(c.ptr<T>(), c.ptr<T>() + cm.batch * cm.size(), out.ptr<T>());
    return absl::OkStatus();
  }
  std::vector<T> wa(h.size()), wc(cm.size());
  T query = 0;
  int info = 0;
  lapack::Ormqr(side, trans, cm.rows, cm.cols, k, wa.data(), lda,
                tau.ptr<T>(), wc.data(), ldc, &query, -1, &info);
  std::vector<T> work(WorkSize(query));
  for (int64_t b = 0; b < cm.batch; ++b) {
    ToColMajor(a.ptr<T>() + b * h.size(), h.rows, h.cols, wa.data());
    ToColMajor(c.ptr<T>() + b * cm.size(), cm.rows, cm.cols, wc.data());
    lapack::Ormqr(side, trans, cm.rows, cm.cols, k, wa.data(), lda,
                  tau.ptr<T>() + b * k, wc.data(), ldc, work.data(),
                  static_cast<int>(work.size()), &info);
    FromColMajor(wc.data(), cm.rows, cm.cols, out.ptr<T>() + b * cm.size());
  }
  return absl::OkStatus();
}

// geqrf, then R from the upper triangle and (unless kR) Q from orgqr on
// the first q_cols columns of the same scratch.
template <typename T>
absl::Status QrT(const StridedView& a, QrMode mode, const StridedView& q,
                 const StridedView& r) {
  TD_ASSIGN_OR_RETURN(Mats m, AsMats(a, "linalg.qr"));
  const int k = std::min(m.rows, m.cols), ld = std::max(1, m.rows);
  const bool complete = mode == QrMode::kComplete;
  const int q_cols = complete ? m.rows : k, r_rows = complete ? m.rows : k;
  const int64_t q_size = int64_t{m.rows} * q_cols;
  const int64_t r_size = int64_t{r_rows} * m.cols;
  const int w_cols = std::max(m.cols, q_cols);
  std::vector<T> w(int64_t{ld} * std::max(1, w_cols)), tau(std::max(1, k));
  T geqrf_query = 0, orgqr_query = 0;
  int info = 0;
  if (k > 0) {
    lapack::Geqrf(m.rows, m.cols, w.data(), ld, tau.data(), &geqrf_query, -1,
                  &info);
  }
  if (mode != QrMode::kR && m.rows > 0) {
    lapack::Orgqr(m.rows, q_cols, k, w.data(), ld, tau.data(), &orgqr_query,
                  -1, &info);
  }
  std::vector<T> work(std::max(WorkSize(geqrf_query), WorkSize(orgqr_query)));
  const int lwork = static_cast<int>(work.size());
  for (int64_t b = 0; b < m.batch; ++b) {
    ToColMajor(a.ptr<T>() + b * m.size(), m.rows, m.cols, w.data(), ld);
    if (k > 0) {
      lapack::Geqrf(m.rows, m.cols, w.data(), ld, tau.data(), work.data(),
                    lwork, &info);
    }
    T* pr = r.ptr<T>() + b * r_size;
    for (int i = 0; i < r_rows; ++i) {
      for (int j = 0; j < m.cols; ++j) {
        pr[int64_t{i} * m.cols + j] = i <= j ? w[i + int64_t{j} * ld] : T(0);
      }
    }
    if (mode == QrMode::kR || m.rows == 0) continue;
    lapack::Orgqr(m.rows, q_cols, k, w.data(), ld, tau.data(), work.data(),
                  lwork, &info);
    FromColMajor(w.data(), m.rows, q_cols, q.ptr<T>() + b * q_size, ld);
  }
  return absl::OkStatus();
}

// One driver call on column-major a (m x n, ld m) and b (ldb x nrhs);
// `rank` and `s` where the driver gives them. The workspace query is the
// same call with lwork = -1.
template <typename T>
struct LstsqCall {
  LstsqDriver driver;
  int m, n, nrhs, ldb;
  T rcond;
  std::vector<int> jpvt, iwork;

  void Run(T* a, T* b, T* s, int* rank, T* work, int lwork, int* info) {
    const int lda = std::max(1, m);
    switch (driver) {
      case LstsqDriver::kGels:
        lapack::Gels(m, n, nrhs, a, lda, b, ldb, work, lwork, info);
        break;
      case LstsqDriver::kGelsy:
        std::fill(jpvt.begin(), jpvt.end(), 0);  // every column free
        lapack::Gelsy(m, n, nrhs, a, lda, b, ldb, jpvt.data(), rcond, rank,
                      work, lwork, info);
        break;
      case LstsqDriver::kGelsd:
        lapack::Gelsd(m, n, nrhs, a, lda, b, ldb, s, rcond, rank, work, lwork,
                      iwork.data(), info);
        break;
      case LstsqDriver::kGelss:
        lapack::Gelss(m, n, nrhs, a, lda, b, ldb, s, rcond, rank, work, lwork,
                      info);
        break;
    }
  }
};

absl::Status LstsqInfo(LstsqDriver driver, int info) {
  if (info == 0) return absl::OkStatus();
  if (driver == LstsqDriver::kGels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "torch.linalg.lstsq: The least squares solution could not be computed "
        "because the input matrix does not have full rank (error code: ",
        info, "); use a driver that handles rank deficiency (gelsy, gelsd, "
              "gelss)"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "torch.linalg.lstsq: The algorithm failed to converge because the "
      "input matrix is ill-conditioned or has too many repeated singular "
      "values (error code: ",
      info, ")"));
}

template <typename T>
absl::Status LstsqT(const StridedView& a, const StridedView& b,
                    LstsqDriver driver, double rcond,
                    const StridedView& solution, const StridedView* residuals,
                    const StridedView* rank, const StridedView* sv) {
  TD_ASSIGN_OR_RETURN(Mats am, AsMats(a, "linalg.lstsq"));
  TD_ASSIGN_OR_RETURN(Mats bm, AsMats(b, "linalg.lstsq"));
  const int m = am.rows, n = am.cols, k = std::min(m, n), nrhs = bm.cols;
  const int ldb = std::max({1, m, n});
  // A zero-column B still gets rank and singular values: one zero column.
  const int cols = std::max(1, nrhs);
  LstsqCall<T> call{driver, m, n, cols, ldb, static_cast<T>(rcond), {}, {}};
  call.jpvt.resize(std::max(1, n));
  std::vector<T> wa(std::max<int64_t>(1, am.size()));
  std::vector<T> wb(int64_t{ldb} * cols), s(std::max(1, k));
  int info = 0, r = 0;
  std::vector<T> work(1);
  if (k > 0) {
    T query = 0;
    call.iwork.assign(1, 0);  // gelsd's query returns its iwork size here
    call.Run(wa.data(), wb.data(), s.data(), &r, &query, -1, &info);
    call.iwork.assign(std::max(1, call.iwork[0]), 0);
    work.resize(WorkSize(query));
  }
  for (int64_t i = 0; i < am.batch; ++i) {
    ToColMajor(a.ptr<T>() + i * am.size(), m, n, wa.data());
    std::fill(wb.begin(), wb.end(), T(0));
    ToColMajor(b.ptr<T>() + i * bm.size(), m, nrhs, wb.data(), ldb);
    r = 0;
    if (k > 0) {
      call.Run(wa.data(), wb.data(), s.data(), &r, work.data(),
               static_cast<int>(work.size()), &info);
      TD_RETURN_IF_ERROR(LstsqInfo(driver, info));
    }  // else no equations or no unknowns: x = 0 (wb's first n rows are
       // zero when m = 0), and all of b is residual
    FromColMajor(wb.data(), n, nrhs, solution.ptr<T>() + i * n * int64_t{nrhs},
                 ldb);
    if (residuals != nullptr) {
      T* res = residuals->ptr<T>() + i * nrhs;
      for (int j = 0; j < nrhs; ++j) {
        T sum = 0;
        for (int row = n; row < m; ++row) {
          const T v = wb[row + int64_t{j} * ldb];
          sum += v * v;
        }
        res[j] = sum;
      }
    }
    if (rank != nullptr) rank->ptr<int64_t>()[i] = r;
    if (sv != nullptr) std::copy(s.begin(), s.begin() + k, sv->ptr<T>() + i * k);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Geqrf(const StridedView& a, const StridedView& qr,
                   const StridedView& tau) {
  return ForFloat(a, "geqrf",
                  [&](auto t) { return GeqrfT<decltype(t)>(a, qr, tau); });
}

absl::Status HouseholderProduct(const StridedView& a, const StridedView& tau,
                                const StridedView& q) {
  return ForFloat(a, "linalg.householder_product", [&](auto t) {
    return HouseholderProductT<decltype(t)>(a, tau, q);
  });
}

absl::Status Ormqr(const StridedView& a, const StridedView& tau,
                   const StridedView& c, bool left, bool transpose,
                   const StridedView& out) {
  return ForFloat(a, "ormqr", [&](auto t) {
    return OrmqrT<decltype(t)>(a, tau, c, left, transpose, out);
  });
}

absl::Status Qr(const StridedView& a, QrMode mode, const StridedView& q,
                const StridedView& r) {
  return ForFloat(a, "linalg.qr",
                  [&](auto t) { return QrT<decltype(t)>(a, mode, q, r); });
}

absl::Status Lstsq(const StridedView& a, const StridedView& b,
                   LstsqDriver driver, double rcond,
                   const StridedView& solution, const StridedView* residuals,
                   const StridedView* rank,
                   const StridedView* singular_values) {
  return ForFloat(a, "linalg.lstsq", [&](auto t) {
    return LstsqT<decltype(t)>(a, b, driver, rcond, solution, residuals, rank,
                               singular_values);
  });
}

}  // namespace cpu
}  // namespace tensord

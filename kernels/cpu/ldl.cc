// LAPACK's sytrf/sytrs for the LDL rows (contract in ldl.h), one matrix at a
// time through column-major scratch as linalg.cc.
#include "kernels/cpu/ldl.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/lapack.h"
#include "kernels/cpu/lapack_layout.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cpu {
namespace {

using namespace lapack_layout;  // NOLINT: the shared layout helpers

template <typename T>
absl::Status LdlFactorT(const StridedView& a, const StridedView& ld,
                        const StridedView& pivots, const StridedView& info) {
  TD_ASSIGN_OR_RETURN(Mats m, AsMats(a, "linalg.ldl_factor"));
  const int n = m.rows;
  if (n == 0) {
    std::fill(info.ptr<int32_t>(), info.ptr<int32_t>() + m.batch, 0);
    return absl::OkStatus();
  }
  std::vector<T> w(m.size());
  T query = 0;
  int status = 0;
  lapack::Sytrf('L', n, w.data(), n, pivots.ptr<int32_t>(), &query, -1,
                &status);
  std::vector<T> work(WorkSize(query));
  for (int64_t b = 0; b < m.batch; ++b) {
    ToColMajor(a.ptr<T>() + b * m.size(), n, n, w.data());
    for (int j = 1; j < n; ++j) {  // the strict upper triangle: zero
      std::fill(w.begin() + int64_t{j} * n, w.begin() + int64_t{j} * n + j,
                T(0));
    }
    lapack::Sytrf('L', n, w.data(), n, pivots.ptr<int32_t>() + b * n,
                  work.data(), static_cast<int>(work.size()), &status);
    info.ptr<int32_t>()[b] = status;
    FromColMajor(w.data(), n, n, ld.ptr<T>() + b * m.size());
  }
  return absl::OkStatus();
}

// Pivots LAPACK can follow (see ldl.h): lower storage, a 2 x 2 block is a
// pair of equal negatives starting at its first row.
void SanitizePivots(const int32_t* given, int n, int* piv) {
  for (int k = 0; k < n;) {
    const int32_t p = given[k];
    if (p < 0 && -p <= n && k + 1 < n && given[k + 1] == p) {
      piv[k] = piv[k + 1] = p;
      k += 2;
      continue;
    }
    piv[k] = p >= 1 && p <= n ? p : k + 1;
    ++k;
  }
}

template <typename T>
absl::Status LdlSolveT(const StridedView& ld, const StridedView& pivots,
                       const StridedView& b, const StridedView& x) {
  TD_ASSIGN_OR_RETURN(Mats a, AsMats(ld, "linalg.ldl_solve"));
  TD_ASSIGN_OR_RETURN(Mats rhs, AsMats(b, "linalg.ldl_solve"));
  const int n = a.rows, k = rhs.cols;
  if (n == 0 || k == 0) return absl::OkStatus();
  std::vector<T> wa(a.size()), wx(rhs.size());
  std::vector<int> piv(n);
  for (int64_t i = 0; i < a.batch; ++i) {
    ToColMajor(ld.ptr<T>() + i * a.size(), n, n, wa.data());
    SanitizePivots(pivots.ptr<int32_t>() + i * n, n, piv.data());
    ToColMajor(b.ptr<T>() + i * rhs.size(), n, k, wx.data());
    int status = 0;
    lapack::Sytrs('L', n, k, wa.data(), n, piv.data(), wx.data(), n, &status);
    FromColMajor(wx.data(), n, k, x.ptr<T>() + i * rhs.size());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LdlFactor(const StridedView& a, const StridedView& ld,
                       const StridedView& pivots, const StridedView& info) {
  return ForFloat(a, "linalg.ldl_factor", [&](auto t) {
    return LdlFactorT<decltype(t)>(a, ld, pivots, info);
  });
}

absl::Status LdlSolve(const StridedView& ld, const StridedView& pivots,
                      const StridedView& b, const StridedView& x) {
  return ForFloat(ld, "linalg.ldl_solve", [&](auto t) {
    return LdlSolveT<decltype(t)>(ld, pivots, b, x);
  });
}

}  // namespace cpu
}  // namespace tensord

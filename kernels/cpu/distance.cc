#include "kernels/cpu/distance.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "runtime/core/distance_math.h"

namespace tensord {
namespace cpu {
namespace {

// a - b rounded to T, as PyTorch computes it: the max norm's gradient
// compares |a - b| with the distance the forward rounded to T.
template <typename T>
double Diff(T a, T b) {
  return static_cast<double>(static_cast<T>(a - b));
}

// The distance of rows a and b of length m (kNanInMax: distance_math.h).
template <DistanceNorm K, bool kNanInMax, typename T>
T RowDistance(const T* a, const T* b, int64_t m, double p) {
  double acc = 0;
  for (int64_t k = 0; k < m; ++k) {
    acc = DistanceAdd<K, kNanInMax>(acc, Diff(a[k], b[k]), p);
  }
  return static_cast<T>(DistanceFinish<K>(acc, p));
}

// acc[k] += the gradient of a's coordinate k for the pair (a, b).
template <DistanceNorm K, typename T>
void AddRowGrad(const T* a, const T* b, int64_t m, double g, double dist,
                double p, double* acc) {
  for (int64_t k = 0; k < m; ++k) {
    acc[k] += DistanceGrad<K>(Diff(a[k], b[k]), g, dist, p);
  }
}

// The [n, m] size of the last two dims of a view and the product of the
// others.
struct Mat {
  int64_t batch = 1, rows = 0, cols = 0;
};
Mat MatOf(const StridedView& v) {
  Mat s;
  for (int d = 0; d + 2 < v.ndim; ++d) s.batch *= v.sizes[d];
  s.rows = v.ndim >= 2 ? v.sizes[v.ndim - 2] : 1;
  s.cols = v.ndim >= 1 ? v.sizes[v.ndim - 1] : 1;
  return s;
}

}  // namespace

absl::Status Cdist(const StridedView& x1, const StridedView& x2, double p,
                   const StridedView& out) {
  const Mat a = MatOf(x1), b = MatOf(x2);
  const int64_t m = a.cols, rows = a.batch * a.rows;
  return DispatchFloat(out.dtype, "cdist", [&](auto tag) {
    using T = decltype(tag);
    const T* u = x1.ptr<const T>();
    const T* v = x2.ptr<const T>();
    T* o = out.ptr<T>();
    WithDistanceNorm(p, [&](auto norm) {
      constexpr DistanceNorm K = decltype(norm)::value;
      ParallelFor(rows, b.rows * std::max<int64_t>(m, 1),
                  [&](int64_t lo, int64_t hi) {
                    for (int64_t r = lo; r < hi; ++r) {
                      const T* row = u + r * m;
                      const T* other = v + (r / a.rows) * b.rows * m;
                      for (int64_t j = 0; j < b.rows; ++j) {
                        o[r * b.rows + j] =
                            RowDistance<K, false>(row, other + j * m, m, p);
                      }
                    }
                  });
    });
  });
}

absl::Status CdistBackward(const StridedView& grad, const StridedView& x1,
                           const StridedView& x2, const StridedView& dist,
                           double p, const StridedView& out) {
  const Mat a = MatOf(x1), b = MatOf(x2);
  const int64_t m = a.cols, rows = a.batch * a.rows;
  return DispatchFloat(out.dtype, "_cdist_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* u = x1.ptr<const T>();
    const T* v = x2.ptr<const T>();
    const T* g = grad.ptr<const T>();
    const T* dv = dist.ptr<const T>();
    T* o = out.ptr<T>();
    WithDistanceNorm(p, [&](auto norm) {
      constexpr DistanceNorm K = decltype(norm)::value;
      ParallelFor(rows, b.rows * std::max<int64_t>(m, 1),
                  [&](int64_t lo, int64_t hi) {
                    std::vector<double> acc(m);
                    for (int64_t r = lo; r < hi; ++r) {
                      std::fill(acc.begin(), acc.end(), 0.0);
                      const T* row = u + r * m;
                      const T* other = v + (r / a.rows) * b.rows * m;
                      for (int64_t j = 0; j < b.rows; ++j) {
                        AddRowGrad<K>(row, other + j * m, m, g[r * b.rows + j],
                                      dv[r * b.rows + j], p, acc.data());
                      }
                      std::copy(acc.begin(), acc.end(), o + r * m);
                    }
                  });
    });
  });
}

absl::Status Pdist(const StridedView& x, double p, const StridedView& out) {
  const Mat a = MatOf(x);
  const int64_t n = a.rows, m = a.cols;
  return DispatchFloat(out.dtype, "pdist", [&](auto tag) {
    using T = decltype(tag);
    const T* u = x.ptr<const T>();
    T* o = out.ptr<T>();
    WithDistanceNorm(p, [&](auto norm) {
      constexpr DistanceNorm K = decltype(norm)::value;
      // Row i has n - 1 - i pairs: the grain is an average row's work.
      ParallelFor(n, (n / 2 + 1) * std::max<int64_t>(m, 1),
                  [&](int64_t lo, int64_t hi) {
                    for (int64_t i = lo; i < hi; ++i) {
                      T* dst = o + PairStart(i, n);
                      for (int64_t j = i + 1; j < n; ++j) {
                        dst[j - i - 1] =
                            RowDistance<K, true>(u + i * m, u + j * m, m, p);
                      }
                    }
                  });
    });
  });
}

absl::Status PdistBackward(const StridedView& grad, const StridedView& x,
                           const StridedView& dist, double p,
                           const StridedView& out) {
  const Mat a = MatOf(x);
  const int64_t n = a.rows, m = a.cols;
  return DispatchFloat(out.dtype, "_pdist_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* u = x.ptr<const T>();
    const T* g = grad.ptr<const T>();
    const T* dv = dist.ptr<const T>();
    T* o = out.ptr<T>();
    WithDistanceNorm(p, [&](auto norm) {
      constexpr DistanceNorm K = decltype(norm)::value;
      // Row i's gradient sums its n - 1 pairs, each taken from i's end (the
      // gradients are odd in the difference: Note [Distance norms]).
      ParallelFor(n, n * std::max<int64_t>(m, 1), [&](int64_t lo, int64_t hi) {
        std::vector<double> acc(m);
        for (int64_t i = lo; i < hi; ++i) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t j = 0; j < n; ++j) {
            if (j == i) continue;
            const int64_t k = i < j ? PairStart(i, n) + (j - i - 1)
                                    : PairStart(j, n) + (i - j - 1);
            AddRowGrad<K>(u + i * m, u + j * m, m, g[k], dv[k], p, acc.data());
          }
          std::copy(acc.begin(), acc.end(), o + i * m);
        }
      });
    });
  });
}

}  // namespace cpu
}  // namespace tensord

#include "kernels/cpu/sort.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "runtime/core/scan_math.h"

namespace tensord {
namespace cpu {
namespace {

struct Layout {
  int64_t outer = 1, size = 1, inner = 1;
};

Layout Around(const StridedView& v, int dim) {
  Layout l;
  if (v.ndim == 0) return l;
  for (int i = 0; i < dim; ++i) l.outer *= v.sizes[i];
  l.size = v.sizes[dim];
  for (int i = dim + 1; i < v.ndim; ++i) l.inner *= v.sizes[i];
  return l;
}

using scan::IsNan;

// fn(base, slice) for each row along the dim of l (base: the offset of its
// first element, its k-th at base + k * l.inner; slice: o * inner + i, the
// row's number), rows split over the pool.
template <typename Fn>
void ForEachRow(const Layout& l, Fn&& fn) {
  ParallelFor(l.outer * l.inner, l.size, [&](int64_t begin, int64_t end) {
    for (int64_t slice = begin; slice < end; ++slice) {
      const int64_t o = slice / l.inner, i = slice % l.inner;
      fn(o * l.size * l.inner + i, slice);
    }
  });
}

// A (value, position) pair of a row, and the stable order on them: NaN the
// largest value (PyTorch's order), ties by position. std::sort with it gives
// a stable sort; any partial selection with it gives the stable sort's first k.
template <typename T>
using Pair = std::pair<T, int64_t>;

template <typename T>
struct StableOrder {
  bool descending;
  static bool Less(T a, T b) { return (IsNan(b) && !IsNan(a)) || a < b; }
  bool operator()(const Pair<T>& a, const Pair<T>& b) const {
    if (descending ? Less(b.first, a.first) : Less(a.first, b.first))
      return true;
    const bool after =
        descending ? Less(a.first, b.first) : Less(b.first, a.first);
    return !after && a.second < b.second;
  }
};

// Copies the row of `l` starting at x[base] into `row` as (value, position).
template <typename T>
void CopyRow(const T* x, const Layout& l, int64_t base,
             std::vector<Pair<T>>* row) {
  for (int64_t k = 0; k < l.size; ++k) (*row)[k] = {x[base + k * l.inner], k};
}

}  // namespace

absl::Status Sort(const StridedView& in, int dim, bool descending,
                  const StridedView& values, const StridedView& indices) {
  const Layout l = Around(in, dim);
  return DispatchAll(in.dtype, "sort", [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.ptr<T>();
    T* v = values.ptr<T>();
    int64_t* idx = indices.ptr<int64_t>();
    // NaN is the largest value (PyTorch's order). Each row is copied into
    // contiguous (value, position) pairs and sorted with ties broken by
    // position: the stable order, from std::sort (faster than stable_sort)
    // on data that stays in cache rather than an index sort reading x.
    const StableOrder<T> before{descending};
    ParallelFor(l.outer * l.inner, l.size, [&](int64_t begin, int64_t end) {
      std::vector<Pair<T>> row(l.size);
      for (int64_t slice = begin; slice < end; ++slice) {
        const int64_t o = slice / l.inner, i = slice % l.inner;
        const int64_t base = o * l.size * l.inner + i;
        CopyRow(x, l, base, &row);
        std::sort(row.begin(), row.end(), before);
        for (int64_t k = 0; k < l.size; ++k) {
          v[base + k * l.inner] = row[k].first;
          idx[base + k * l.inner] = row[k].second;
        }
      }
    });
  });
}

// Up to this k, topk keeps a sorted buffer in one pass over the row (an
// entry below the buffer's last costs one comparison); above it, a
// selection over a copy of the row.
constexpr int64_t kSmallTopK = 32;

absl::Status TopKIndices(const StridedView& in, int dim, int64_t k,
                         bool largest, const StridedView& indices) {
  const Layout l = Around(in, dim);
  return DispatchAll(in.dtype, "topk", [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.ptr<T>();
    int64_t* idx = indices.ptr<int64_t>();
    const StableOrder<T> before{largest};
    if (k == 0) return;
    if (k <= kSmallTopK) {  // one pass: a sorted buffer of the best k so far
      ParallelFor(l.outer * l.inner, l.size, [&](int64_t begin, int64_t end) {
        Pair<T> best[kSmallTopK];
        for (int64_t slice = begin; slice < end; ++slice) {
          const int64_t o = slice / l.inner, i = slice % l.inner;
          const int64_t base = o * l.size * l.inner + i;
          int64_t n = 0;
          for (int64_t j = 0; j < l.size; ++j) {
            const Pair<T> e{x[base + j * l.inner], j};
            if (n == k && !before(e, best[k - 1])) continue;  // most entries
            int64_t at = n < k ? n++ : k - 1;
            for (; at > 0 && before(e, best[at - 1]); --at)
              best[at] = best[at - 1];
            best[at] = e;
          }
          const int64_t out_base = o * k * l.inner + i;
          for (int64_t j = 0; j < k; ++j)
            idx[out_base + j * l.inner] = best[j].second;
        }
      });
      return;
    }
    ParallelFor(l.outer * l.inner, l.size, [&](int64_t begin, int64_t end) {
      std::vector<Pair<T>> row(l.size);
      for (int64_t slice = begin; slice < end; ++slice) {
        const int64_t o = slice / l.inner, i = slice % l.inner;
        const int64_t base = o * l.size * l.inner + i;
        CopyRow(x, l, base, &row);
        if (k < l.size) {  // the k first to the front, then in order
          std::nth_element(row.begin(), row.begin() + (k - 1), row.end(),
                           before);
        }
        std::sort(row.begin(), row.begin() + k, before);
        const int64_t out_base = o * k * l.inner + i;
        for (int64_t j = 0; j < k; ++j)
          idx[out_base + j * l.inner] = row[j].second;
      }
    });
  });
}

absl::Status CumScan(const StridedView& in, int dim, bool product,
                     const StridedView& out) {
  const Layout l = Around(in, dim);
  return DispatchAll(out.dtype, product ? "cumprod" : "cumsum", [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.ptr<T>();
    T* y = out.ptr<T>();
    auto step = [product](T acc, T e) -> T {
      if constexpr (std::is_same_v<T, bool>) {
        return product ? (acc && e) : (acc || e);
      } else {  // integers wrap around (-fwrapv: kernels/cpu/BUILD)
        return product ? T(acc * e) : T(acc + e);
      }
    };
    if (l.inner == 1) {  // one running value per row
      ParallelFor(l.outer, l.size, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          const T* xr = x + o * l.size;
          T* yr = y + o * l.size;
          T acc = product ? T(1) : T(0);
          for (int64_t k = 0; k < l.size; ++k) yr[k] = acc = step(acc, xr[k]);
        }
      });
      return;
    }
    // inner > 1: a block of neighbouring columns advances one step of dim
    // at a time (unit stride, vectorisable; each column's order of
    // accumulation is unchanged), blocks split over the pool.
    constexpr int64_t kBlock = 512;
    const int64_t blocks = (l.inner + kBlock - 1) / kBlock;
    ParallelFor(
        l.outer * blocks, l.size * kBlock, [&](int64_t begin, int64_t end) {
          for (int64_t job = begin; job < end; ++job) {
            const int64_t o = job / blocks, i0 = (job % blocks) * kBlock;
            const int64_t n = std::min(kBlock, l.inner - i0);
            const T* xs = x + o * l.size * l.inner + i0;
            T* ys = y + o * l.size * l.inner + i0;
            for (int64_t i = 0; i < n; ++i)
              ys[i] = step(product ? T(1) : T(0), xs[i]);
            for (int64_t k = 1; k < l.size; ++k) {
              const T* xk = xs + k * l.inner;
              const T* prev = ys + (k - 1) * l.inner;
              T* yk = ys + k * l.inner;
              for (int64_t i = 0; i < n; ++i) yk[i] = step(prev[i], xk[i]);
            }
          }
        });
  });
}

absl::Status CumExtreme(const StridedView& in, int dim, bool max,
                        const StridedView& values, const StridedView& indices) {
  const Layout l = Around(in, dim);
  return DispatchAll(in.dtype, max ? "cummax" : "cummin", [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.ptr<T>();
    T* v = values.ptr<T>();
    int64_t* idx = indices.ptr<int64_t>();
    if (l.size == 0) return;
    ForEachRow(l, [&](int64_t base, int64_t) {
      T best = x[base];
      int64_t at = 0;
      for (int64_t k = 0; k < l.size; ++k) {
        const T e = x[base + k * l.inner];
        if (max ? scan::TakesOver<true>(e, best)
                : scan::TakesOver<false>(e, best)) {
          best = e;
          at = k;
        }
        v[base + k * l.inner] = best;
        idx[base + k * l.inner] = at;
      }
    });
  });
}

absl::Status LogCumSumExp(const StridedView& in, int dim,
                          const StridedView& out) {
  const Layout l = Around(in, dim);
  return DispatchFloat(in.dtype, "logcumsumexp", [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.ptr<T>();
    T* y = out.ptr<T>();
    ForEachRow(l, [&](int64_t base, int64_t) {
      double acc = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < l.size; ++k) {
        const int64_t at = base + k * l.inner;
        acc = scan::LogAddExp(static_cast<double>(x[at]), acc);
        y[at] = static_cast<T>(acc);
      }
    });
  });
}

// Note [Mode ties]: PyTorch's CPU mode sorts each row's (value, position)
// pairs by value with std::sort, which is not stable, and reports the
// position of the last pair of the winning run. For rows of up to 16
// elements libstdc++ sorts by insertion (stable), so that is the value's
// last occurrence; longer rows put tied positions in the order introsort
// leaves them. Doing the same here (the same algorithm, comparator and
// library) gives PyTorch's indices everywhere, NaN rows included (NaN
// compares unordered in the sort and equal to nothing in the scan). The
// CUDA kernel finds runs in a stable sort instead: the last occurrence, as
// here for short rows (PyTorch's CUDA mode differs from its CPU one too).
absl::Status Mode(const StridedView& in, int dim, const StridedView& values,
                  const StridedView& indices) {
  const Layout l = Around(in, dim);
  return DispatchAll(in.dtype, "mode", [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.ptr<T>();
    T* v = values.ptr<T>();
    int64_t* idx = indices.ptr<int64_t>();
    if (l.size == 0) return;
    ParallelFor(l.outer * l.inner, l.size, [&](int64_t begin, int64_t end) {
      std::vector<Pair<T>> row(l.size);
      for (int64_t slice = begin; slice < end; ++slice) {
        const int64_t o = slice / l.inner, i = slice % l.inner;
        const int64_t base = o * l.size * l.inner + i;
        CopyRow(x, l, base, &row);
        std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) {
          return a.first < b.first;
        });
        scan::ModeOfSortedRow<T>(
            l.size, [&](int64_t k) { return row[k].first; },
            [&](int64_t k) { return row[k].second; }, &v[slice], &idx[slice]);
      }
    });
  });
}

absl::Status SearchSorted(const StridedView& boundaries,
                          const StridedView& values, bool right,
                          const StridedView& out) {
  const int64_t n = boundaries.sizes[boundaries.ndim - 1];
  const int64_t row_len = values.ndim == 0 ? 1 : values.sizes[values.ndim - 1];
  const bool one_row = boundaries.ndim == 1;
  const int64_t count = values.numel();
  if (count == 0) return absl::OkStatus();
  return DispatchAll(values.dtype, "searchsorted", [&](auto tag) {
    using T = decltype(tag);
    const T* bd = boundaries.ptr<T>();
    const T* val = values.ptr<T>();
    const bool wide = out.dtype == DType::kInt64;
    ParallelFor(count, 256, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) {
        const T* row = bd + (one_row ? 0 : e / row_len * n);
        const int64_t k = scan::SearchRow<T>(
            n, [&](int64_t j) { return row[j]; }, val[e], right);
        if (wide) {
          out.ptr<int64_t>()[e] = k;
        } else {
          out.ptr<int32_t>()[e] = static_cast<int32_t>(k);
        }
      }
    });
  });
}

absl::Status Multinomial(const StridedView& probs, const StridedView& u,
                         bool replacement, const StridedView& out) {
  const int64_t rows = probs.ndim == 2 ? probs.sizes[0] : 1;
  const int64_t n = probs.sizes[probs.ndim - 1];
  const int64_t k = out.sizes[out.ndim - 1];
  absl::Status status;
  absl::Status dispatch =
      DispatchFloat(probs.dtype, "multinomial", [&](auto tag) {
        using T = decltype(tag);
        const T* p = probs.ptr<T>();
        const double* uniform = u.ptr<double>();
        int64_t* o = out.ptr<int64_t>();
        // The weights are data: all of them are checked before any sampling.
        for (int64_t r = 0; r < rows && status.ok(); ++r) {
          double sum = 0;
          int64_t positive = 0;
          for (int64_t j = 0; j < n; ++j) {
            const double w = static_cast<double>(p[r * n + j]);
            if (!(w >= 0) || std::isinf(w)) {
              status = absl::InvalidArgumentError(
                  "multinomial: probability tensor contains either inf, nan or "
                  "element < 0");
              break;
            }
            sum += w;
            positive += w > 0;
          }
          if (!status.ok()) break;
          if (sum <= 0) {
            status = absl::InvalidArgumentError(
                "multinomial: invalid multinomial distribution (sum of "
                "probabilities <= 0)");
          } else if (!replacement && positive < k) {
            status = absl::InvalidArgumentError(
                absl::StrCat("multinomial: cannot draw ", k,
                             " samples without replacement "
                             "from a row with only ",
                             positive, " nonzero probabilities"));
          }
        }
        if (!status.ok()) return;
        ParallelFor(rows, 1, [&](int64_t begin, int64_t end) {
          std::vector<double> w(n);
          for (int64_t r = begin; r < end; ++r) {
            double total = 0;
            for (int64_t j = 0; j < n; ++j) {
              w[j] = static_cast<double>(p[r * n + j]);
              total += w[j];
            }
            for (int64_t s = 0; s < k; ++s) {
              // The first category whose running sum passes u * total; the
              // last positive one if rounding leaves the target unreached.
              const double target = uniform[r * k + s] * total;
              double run = 0;
              int64_t pick = -1;
              for (int64_t j = 0; j < n; ++j) {
                if (w[j] <= 0) continue;
                pick = j;
                run += w[j];
                if (run > target) break;
              }
              o[r * k + s] = pick;
              if (!replacement) {
                total -= w[pick];
                w[pick] = 0;
              }
            }
          }
        });
      });
  return dispatch.ok() ? status : dispatch;
}

}  // namespace cpu
}  // namespace tensord

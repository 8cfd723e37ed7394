#include "kernels/cpu/histogramdd.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/dispatch.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cpu {
namespace {

template <typename T>
void ColumnExtremes(const T* x, int64_t m, int64_t d, std::vector<double>* lo,
                    std::vector<double>* hi) {
  for (int64_t j = 0; j < d; ++j) {
    T mn = x[j], mx = x[j];
    for (int64_t i = 1; i < m; ++i) {
      const T v = x[i * d + j];
      if (std::isnan(v) || std::isnan(mn)) {  // NaN propagates (aminmax)
        mn = mx = std::isnan(v) ? v : mn;
        continue;
      }
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    (*lo)[j] = static_cast<double>(mn);
    (*hi)[j] = static_cast<double>(mx);
  }
}

template <typename T>
void Linspace(double lo, double hi, T* out, int64_t steps) {
  const T start = static_cast<T>(lo), end = static_cast<T>(hi);
  const T step = (end - start) / (steps - 1);
  const int64_t halfway = steps / 2;
  for (int64_t i = 0; i < steps; ++i) {
    out[i] = i < halfway ? std::fma(step, static_cast<T>(i), start)
                         : std::fma(-step, static_cast<T>(steps - i - 1), end);
  }
}

// The flat index of row i's bin, or -1 when it counts nowhere.
template <typename T>
int64_t BinOf(const T* row, absl::Span<const StridedView> edges,
              const std::vector<int64_t>& hist_strides, bool linear) {
  int64_t index = 0;
  for (size_t dim = 0; dim < edges.size(); ++dim) {
    const T* e = edges[dim].ptr<const T>();
    const int64_t n = edges[dim].sizes[0];
    const T left = e[0], right = e[n - 1], x = row[dim];
    if (!(x >= left && x <= right)) return -1;
    int64_t pos;
    if (linear) {
      // In [0, n - 1] for every x inside the edges; an estimate that is not
      // (left == right after rounding: NaN or inf) is clamped, where ATen's
      // int cast is undefined, and the search below then finds the bin.
      const T est = (x - left) * (n - 1) / (right - left);
      pos = (est >= 0 && est <= n - 1) ? static_cast<int64_t>(est)
                                       : (est > 0 ? n - 1 : 0);
      const int64_t lo = std::max(static_cast<int64_t>(0), pos - 1);
      const int64_t hi = std::min(pos + 2, n);
      pos = std::upper_bound(e + lo, e + hi, x) - e - 1;
    } else {
      pos = std::upper_bound(e, e + n, x) - e - 1;
    }
    if (pos == n - 1) pos -= 1;  // the last bin includes its right edge
    index += hist_strides[dim] * pos;
  }
  return index;
}

template <typename T>
void Count(const StridedView& input, const T* w,
           absl::Span<const StridedView> edges, bool linear, bool density,
           T* hist, int64_t bins_total) {
  const int64_t m = input.sizes[0], d = input.sizes[1];
  std::fill(hist, hist + bins_total, T(0));
  std::vector<int64_t> strides(d, 1);
  for (int64_t k = d - 2; k >= 0; --k) {
    strides[k] = strides[k + 1] * (edges[k + 1].sizes[0] - 1);
  }
  if (bins_total > 0 && d > 0) {
    const T* x = input.ptr<const T>();
    for (int64_t i = 0; i < m; ++i) {
      const int64_t b = BinOf(x + i * d, edges, strides, linear);
      if (b >= 0) hist[b] += w == nullptr ? static_cast<T>(1) : w[i];
    }
  }
  if (!density) return;
  T total = 0;
  for (int64_t k = 0; k < bins_total; ++k) total += hist[k];
  for (int64_t k = 0; k < bins_total; ++k) hist[k] /= total;
  for (int64_t dim = 0; dim < d; ++dim) {
    const T* e = edges[dim].ptr<const T>();
    const int64_t n = edges[dim].sizes[0] - 1;
    for (int64_t k = 0; k < bins_total; ++k) {
      const int64_t j = (k / strides[dim]) % n;
      hist[k] /= e[j + 1] - e[j];
    }
  }
}

}  // namespace

absl::Status HistogramddOuterEdges(const StridedView& input,
                                   const std::vector<double>& range,
                                   std::vector<double>* lo,
                                   std::vector<double>* hi) {
  TD_RETURN_IF_ERROR(RequireFloat(input.dtype, "histogramdd"));
  const int64_t m = input.sizes[0], d = input.sizes[1];
  lo->assign(d, 0.0);
  hi->assign(d, 1.0);
  if (!range.empty()) {
    for (int64_t j = 0; j < d; ++j) {
      (*lo)[j] = range[2 * j];
      (*hi)[j] = range[2 * j + 1];
    }
  } else if (m > 0) {
    if (input.dtype == DType::kFloat64) {
      ColumnExtremes(input.ptr<const double>(), m, d, lo, hi);
    } else {
      ColumnExtremes(input.ptr<const float>(), m, d, lo, hi);
    }
  }
  for (int64_t j = 0; j < d; ++j) {
    const double l = (*lo)[j], h = (*hi)[j];
    if (!std::isfinite(l) || !std::isfinite(h)) {
      return absl::InvalidArgumentError(
          absl::StrCat("torch.histogramdd: dimension ", j, "'s range [", l,
                       ", ", h, "] is not finite"));
    }
    if (l > h) {
      return absl::InvalidArgumentError(absl::StrCat(
          "torch.histogramdd: min should not exceed max, but got min ", l,
          " max ", h, " for dimension ", j));
    }
    if (l == h) {  // numpy's: an empty range widens
      (*lo)[j] -= 0.5;
      (*hi)[j] += 0.5;
    }
  }
  return absl::OkStatus();
}

absl::Status HistogramddLinspace(double lo, double hi,
                                 const StridedView& edges) {
  TD_RETURN_IF_ERROR(RequireFloat(edges.dtype, "histogramdd"));
  if (edges.dtype == DType::kFloat64) {
    Linspace(lo, hi, edges.ptr<double>(), edges.sizes[0]);
  } else {
    Linspace(lo, hi, edges.ptr<float>(), edges.sizes[0]);
  }
  return absl::OkStatus();
}

absl::Status Histogramdd(const StridedView& input, const StridedView& weight,
                         absl::Span<const StridedView> edges, bool linear,
                         bool density, const StridedView& hist) {
  TD_RETURN_IF_ERROR(RequireFloat(input.dtype, "histogramdd"));
  if (input.dtype == DType::kFloat64) {
    Count(input, weight.data ? weight.ptr<const double>() : nullptr, edges,
          linear, density, hist.ptr<double>(), hist.numel());
  } else {
    Count(input, weight.data ? weight.ptr<const float>() : nullptr, edges,
          linear, density, hist.ptr<float>(), hist.numel());
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace tensord

#include "kernels/cpu/segment_reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cpu {
namespace {

// The geometry: data as [outer, len, inner], and each outer row's segment
// starts (K + 1 of them, the last the end of the covered part).
struct Segments {
  int64_t outer = 1, len = 0, inner = 1, k = 0;
  std::vector<int64_t> starts;  // [outer, k + 1]
  int64_t Start(int64_t o, int64_t s) const { return starts[o * (k + 1) + s]; }
};

absl::StatusOr<Segments> Geometry(const StridedView& data,
                                  const StridedView& bounds,
                                  const SegmentOptions& o) {
  Segments g;
  for (int d = 0; d < o.axis; ++d) g.outer *= data.sizes[d];
  g.len = data.sizes[o.axis];
  for (int d = o.axis + 1; d < data.ndim; ++d) g.inner *= data.sizes[d];
  const int64_t per_row = bounds.sizes[bounds.ndim - 1];
  g.k = o.offsets ? per_row - 1 : per_row;
  const int64_t* b = bounds.ptr<const int64_t>();
  g.starts.resize(g.outer * (g.k + 1));
  for (int64_t r = 0; r < g.outer; ++r) {
    const int64_t* row = b + r * per_row;
    int64_t* st = g.starts.data() + r * (g.k + 1);
    if (o.offsets) {
      for (int64_t s = 0; s <= g.k; ++s) st[s] = row[s];
    } else {
      st[0] = 0;
      for (int64_t s = 0; s < g.k; ++s) {
        if (row[s] < 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "segment_reduce: lengths must be non-negative, got ", row[s]));
        }
        st[s + 1] = st[s] + row[s];
      }
    }
    for (int64_t s = 0; s < g.k; ++s) {
      if (st[s] < 0 || st[s] > st[s + 1] || st[s + 1] > g.len) {
        return absl::InvalidArgumentError(absl::StrCat(
            "segment_reduce: segment ", s, " of row ", r, " spans [", st[s],
            ", ", st[s + 1], "), outside the axis of length ", g.len));
      }
    }
    if (!o.unsafe && !o.offsets && st[g.k] != g.len) {
      return absl::InvalidArgumentError(
          "segment_reduce(): Expected all rows of lengths along axis to sum "
          "to data.size(lengths.dim()-1) when !unsafe.");
    }
  }
  return g;
}

template <typename T>
T Identity(const SegmentOptions& o) {
  if (o.has_initial) return static_cast<T>(o.initial);
  switch (o.reduce) {
    case SegmentReduction::kMax:
      return -std::numeric_limits<T>::infinity();
    case SegmentReduction::kMin:
      return std::numeric_limits<T>::infinity();
    case SegmentReduction::kProd:
      return 1;
    default:
      return 0;
  }
}

template <typename T>
T Combine(SegmentReduction r, T acc, T v) {
  switch (r) {
    case SegmentReduction::kMax:
      return std::isnan(v) || v > acc ? v : acc;  // NaN sticks: acc stays
    case SegmentReduction::kMin:
      return std::isnan(v) || v < acc ? v : acc;
    case SegmentReduction::kProd:
      return acc * v;
    default:
      return acc + v;
  }
}

template <typename T>
void Forward(const Segments& g, const T* x, const SegmentOptions& o, T* out) {
  ParallelFor(g.outer * g.k,
              g.inner * std::max<int64_t>(1, g.len / std::max<int64_t>(g.k, 1)),
              [&](int64_t lo, int64_t hi) {
                for (int64_t q = lo; q < hi; ++q) {
                  const int64_t r = q / g.k, s = q % g.k;
                  const int64_t a = g.Start(r, s), e = g.Start(r, s + 1);
                  for (int64_t i = 0; i < g.inner; ++i) {
                    T acc = Identity<T>(o);
                    for (int64_t j = a; j < e; ++j) {
                      const T v = x[(r * g.len + j) * g.inner + i];
                      acc = Combine(o.reduce, acc, v);
                    }
                    if (o.reduce == SegmentReduction::kMean) {
                      if (e > a) {
                        acc /= static_cast<T>(e - a);
                      } else if (!o.has_initial) {
                        acc = std::numeric_limits<T>::quiet_NaN();
                      }
                    }
                    out[(r * g.k + s) * g.inner + i] = acc;
                  }
                }
              });
}

template <typename T>
void Backward(const Segments& g, const T* go, const T* out, const T* x,
              const SegmentOptions& o, T* gx) {
  std::fill(gx, gx + g.outer * g.len * g.inner, T(0));
  ParallelFor(g.outer * g.k,
              g.inner * std::max<int64_t>(1, g.len / std::max<int64_t>(g.k, 1)),
              [&](int64_t lo, int64_t hi) {
                for (int64_t q = lo; q < hi; ++q) {
                  const int64_t r = q / g.k, s = q % g.k;
                  const int64_t a = g.Start(r, s), e = g.Start(r, s + 1),
                                n = e - a;
                  for (int64_t i = 0; i < g.inner; ++i) {
                    const T gr = go[(r * g.k + s) * g.inner + i];
                    const T y = out[(r * g.k + s) * g.inner + i];
                    auto X = [&](int64_t j) {
                      return x[(r * g.len + j) * g.inner + i];
                    };
                    auto GX = [&](int64_t j) -> T& {
                      return gx[(r * g.len + j) * g.inner + i];
                    };
                    switch (o.reduce) {
                      case SegmentReduction::kSum:
                        for (int64_t j = a; j < e; ++j) GX(j) = gr;
                        break;
                      case SegmentReduction::kMean:
                        for (int64_t j = a; j < e; ++j)
                          GX(j) = gr / static_cast<T>(n);
                        break;
                      case SegmentReduction::kMax:
                      case SegmentReduction::kMin: {
                        int64_t ties = 0;
                        for (int64_t j = a; j < e; ++j) {
                          if (std::isnan(X(j)) || X(j) == y) {
                            GX(j) = gr;
                            ++ties;
                          }
                        }
                        if (ties < 2) break;
                        for (int64_t j = a; j < e; ++j) {
                          if (GX(j) > 0) GX(j) /= static_cast<T>(ties);
                        }
                        break;
                      }
                      case SegmentReduction::kProd:
                        for (int64_t j = a; j < e; ++j) {
                          if (std::isnan(X(j)) || X(j) == 0) {
                            T others = Identity<T>(o);
                            for (int64_t m = a; m < e; ++m) {
                              if (m != j) others *= X(m);
                            }
                            GX(j) = gr * others;
                          } else {
                            GX(j) = gr * y / X(j);
                          }
                        }
                        break;
                    }
                  }
                }
              });
}

}  // namespace

absl::Status SegmentReduce(const StridedView& data, const StridedView& bounds,
                           const SegmentOptions& options,
                           const StridedView& output) {
  TD_RETURN_IF_ERROR(RequireFloat(data.dtype, "segment_reduce"));
  TD_ASSIGN_OR_RETURN(Segments g, Geometry(data, bounds, options));
  if (data.dtype == DType::kFloat64) {
    Forward<double>(g, data.ptr<const double>(), options, output.ptr<double>());
  } else {
    Forward<float>(g, data.ptr<const float>(), options, output.ptr<float>());
  }
  return absl::OkStatus();
}

absl::Status SegmentReduceBackward(const StridedView& grad,
                                   const StridedView& output,
                                   const StridedView& data,
                                   const StridedView& bounds,
                                   const SegmentOptions& options,
                                   const StridedView& grad_data) {
  TD_RETURN_IF_ERROR(RequireFloat(data.dtype, "_segment_reduce_backward"));
  SegmentOptions o = options;
  o.unsafe = true;  // the forward checked coverage; uncovered data gets 0
  TD_ASSIGN_OR_RETURN(Segments g, Geometry(data, bounds, o));
  if (data.dtype == DType::kFloat64) {
    Backward<double>(g, grad.ptr<const double>(), output.ptr<const double>(),
                     data.ptr<const double>(), o, grad_data.ptr<double>());
  } else {
    Backward<float>(g, grad.ptr<const float>(), output.ptr<const float>(),
                    data.ptr<const float>(), o, grad_data.ptr<float>());
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace tensord

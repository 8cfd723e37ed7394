// Multi-pass reductions: var/std (two passes over the data, in double),
// logsumexp (max-shifted), p-norms and arg-max/min. For the others each
// output element gathers its reduced elements in row-major order into a
// per-thread buffer, then computes its statistic.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/reduce_runs.h"

namespace tensord {
namespace cpu {
namespace {

// The sum of f(x) over a run of n elements `stride` apart, in double; a
// unit-stride run with independent lanes so the loop vectorises.
template <typename In, typename F>
double LaneSum(const In* p, int64_t n, int64_t stride, F f) {
  if (stride != 1) {
    double acc = 0;
    for (int64_t i = 0; i < n; ++i)
      acc += f(static_cast<double>(p[i * stride]));
    return acc;
  }
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      lanes[j] += f(static_cast<double>(p[i + j]));
    }
  }
  double acc = 0;
  for (; i < n; ++i) acc += f(static_cast<double>(p[i]));
  for (int j = 0; j < kLanes; ++j) acc += lanes[j];
  return acc;
}

// Statistics over a gathered copy (var/std take two passes over the data
// instead, in ReduceStat).
double Stat(StatOp op, const std::vector<double>& v, double param) {
  const size_t n = v.size();
  switch (op) {
    case StatOp::kVar:
    case StatOp::kStd:
      break;
    case StatOp::kLogSumExp: {
      double m = -std::numeric_limits<double>::infinity();
      for (double x : v) m = std::max(m, x);
      if (n == 0) return m;
      if (std::isinf(m)) return m;
      double s = 0;
      for (double x : v) s += std::exp(x - m);
      return m + std::log(s);
    }
    case StatOp::kNorm: {
      if (std::isinf(param)) {
        double m = param > 0 ? 0 : std::numeric_limits<double>::infinity();
        for (double x : v) {
          m = param > 0 ? std::max(m, std::fabs(x)) : std::min(m, std::fabs(x));
        }
        return m;
      }
      if (param == 0) {
        double c = 0;
        for (double x : v) c += x != 0;
        return c;
      }
      double s = 0;
      if (param == 2) {
        for (double x : v) s += x * x;
        return std::sqrt(s);
      }
      for (double x : v) s += std::pow(std::fabs(x), param);
      return std::pow(s, 1.0 / param);
    }
    case StatOp::kArgMax:
    case StatOp::kArgMin: {
      size_t best = 0;
      for (size_t i = 0; i < n; ++i) {
        if (std::isnan(v[i])) return static_cast<double>(i);
        if (op == StatOp::kArgMax ? v[i] > v[best] : v[i] < v[best]) best = i;
      }
      return static_cast<double>(best);
    }
  }
  return 0;
}

}  // namespace

absl::Status ReduceStat(StatOp op, const StridedView& in, const bool* reduced,
                        double param, const StridedView& out) {
  int kept = 0, red = 0;
  int64_t kept_sizes[kMaxDims], kept_in[kMaxDims], kept_out[kMaxDims];
  int64_t red_sizes[kMaxDims], red_strides[kMaxDims];
  int64_t kept_count = 1, red_count = 1;
  for (int d = 0; d < in.ndim; ++d) {
    if (reduced[d]) {
      red_sizes[red] = in.sizes[d];
      red_strides[red++] = in.strides[d];
      red_count *= in.sizes[d];
    } else {
      kept_sizes[kept] = in.sizes[d];
      kept_in[kept] = in.strides[d];
      kept_out[kept++] = out.strides[d];
      kept_count *= in.sizes[d];
    }
  }
  internal::MergeReducedDims(red_sizes, red_strides, &red);
  const bool is_arg = op == StatOp::kArgMax || op == StatOp::kArgMin;
  const bool is_var = op == StatOp::kVar || op == StatOp::kStd;
  if (is_arg && red_count == 0 && kept_count > 0) {
    return absl::InvalidArgumentError(
        "argmax/argmin of an empty dimension has no answer");
  }
  absl::Status inner;
  absl::Status status = DispatchAll(in.dtype, "reduction", [&](auto tag) {
    using In = decltype(tag);
    const In* data = in.ptr<const In>();
    inner = DispatchAll(out.dtype, "reduction", [&](auto out_tag) {
      using Out = decltype(out_tag);
      Out* o = out.ptr<Out>();
      ParallelFor(kept_count, red_count, [&](int64_t b, int64_t e) {
        std::vector<double> buf(is_var ? 0 : red_count);
        for (int64_t k = b; k < e; ++k) {
          int64_t rem = k, in_off = 0, out_off = 0;
          for (int d = kept - 1; d >= 0; --d) {
            const int64_t idx = rem % kept_sizes[d];
            rem /= kept_sizes[d];
            in_off += idx * kept_in[d];
            out_off += idx * kept_out[d];
          }
          // Calls fn(first element, length, stride) for the runs along the
          // innermost reduced dim, an odometer over the rest (row-major
          // order, no division per element).
          auto for_each_run = [&](auto fn) {
            if (red == 0) return fn(data + in_off, int64_t{1}, int64_t{1});
            const int64_t run = red_sizes[red - 1],
                          run_stride = red_strides[red - 1];
            int64_t idx[kMaxDims] = {}, off = in_off;
            for (int64_t r = 0; r < red_count; r += run) {
              fn(data + off, run, run_stride);
              for (int d = red - 2; d >= 0; --d) {
                off += red_strides[d];
                if (++idx[d] < red_sizes[d]) break;
                off -= red_strides[d] * red_sizes[d];
                idx[d] = 0;
              }
            }
          };
          if (is_var) {
            // Two passes straight over the data (no gathered copy).
            double sum = 0, ss = 0;
            for_each_run([&](const In* p, int64_t run, int64_t stride) {
              sum += LaneSum(p, run, stride, [](double v) { return v; });
            });
            const double n = static_cast<double>(red_count);
            const double mean = sum / n;
            for_each_run([&](const In* p, int64_t run, int64_t stride) {
              ss += LaneSum(p, run, stride, [mean](double v) {
                return (v - mean) * (v - mean);
              });
            });
            const double var = ss / std::max(0.0, n - param);
            o[out_off] =
                static_cast<Out>(op == StatOp::kStd ? std::sqrt(var) : var);
            continue;
          }
          int64_t r = 0;
          for_each_run([&](const In* p, int64_t run, int64_t stride) {
            for (int64_t i = 0; i < run; ++i) {
              buf[r + i] = static_cast<double>(p[i * stride]);
            }
            r += run;
          });
          o[out_off] = static_cast<Out>(Stat(op, buf, param));
        }
      });
    });
  });
  return status.ok() ? inner : status;
}

}  // namespace cpu
}  // namespace tensord

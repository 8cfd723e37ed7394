#include "kernels/cpu/reduce.h"

#include <algorithm>
#include <limits>
#include <type_traits>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/reduce_runs.h"

namespace tensord {
namespace cpu {
namespace {

// Splits in's dims into kept dims (walked per output element) and reduced
// dims (walked per accumulation), both as size/stride lists.
struct ReducePlan {
  int kept_ndim = 0, red_ndim = 0;
  int64_t kept_sizes[kMaxDims], kept_in_strides[kMaxDims],
      kept_out_strides[kMaxDims];
  int64_t red_sizes[kMaxDims], red_strides[kMaxDims];
  int64_t kept_count = 1, red_count = 1;
};

ReducePlan MakePlan(const StridedView& in, const bool* reduced,
                    const StridedView& out) {
  ReducePlan p;
  for (int d = 0; d < in.ndim; ++d) {
    if (reduced[d]) {
      p.red_sizes[p.red_ndim] = in.sizes[d];
      p.red_strides[p.red_ndim++] = in.strides[d];
      p.red_count *= in.sizes[d];
    } else {
      p.kept_sizes[p.kept_ndim] = in.sizes[d];
      p.kept_in_strides[p.kept_ndim] = in.strides[d];
      p.kept_out_strides[p.kept_ndim++] = out.strides[d];
      p.kept_count *= in.sizes[d];
    }
  }
  internal::MergeReducedDims(p.red_sizes, p.red_strides, &p.red_ndim);
  return p;
}

// A stride-1 run summed with independent lanes so the loop vectorises
// (the lanes also make the sum more accurate than one running total).
// kFloatLanes: a float32 run into a float32 result, Note [Float sums].
template <typename Acc, bool kFloatLanes, typename In>
Acc SumRun(const In* p, int64_t n) {
  if constexpr (kFloatLanes) return internal::FloatRunSum(p, n);
  constexpr int kLanes = 8;
  Acc lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      lanes[j] += static_cast<Acc>(p[i + j]);
    }
  }
  Acc acc = 0;
  for (; i < n; ++i) acc += static_cast<Acc>(p[i]);
  for (int j = 0; j < kLanes; ++j) acc += lanes[j];
  return acc;
}

template <typename Acc, bool kFloatLanes, typename In>
Acc Accumulate(ReduceOp op, const In* base, const ReducePlan& p) {
  Acc acc;
  switch (op) {
    case ReduceOp::kProd:
      acc = Acc{1};
      break;
    case ReduceOp::kMax:
      acc = std::numeric_limits<Acc>::has_infinity
                ? -std::numeric_limits<Acc>::infinity()
                : std::numeric_limits<Acc>::lowest();
      break;
    case ReduceOp::kMin:
      acc = std::numeric_limits<Acc>::has_infinity
                ? std::numeric_limits<Acc>::infinity()
                : std::numeric_limits<Acc>::max();
      break;
    case ReduceOp::kAll:
      acc = Acc{1};
      break;
    default:
      acc = Acc{0};
  }
  if (p.red_count == 0) return acc;
  const int inner = p.red_ndim - 1;
  const int64_t n = p.red_sizes[inner], s = p.red_strides[inner];
  int64_t counter[kMaxDims] = {};
  const int64_t outer = p.red_count / n;
  for (int64_t o = 0; o < outer; ++o) {
    const In* ptr = base;
    for (int d = 0; d < inner; ++d) ptr += counter[d] * p.red_strides[d];
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        if (s == 1) {
          acc += SumRun<Acc, kFloatLanes>(ptr, n);
        } else {
          for (int64_t i = 0; i < n; ++i) {
            acc += static_cast<Acc>(ptr[i * s]);
          }
        }
        break;
      case ReduceOp::kAll:
        for (int64_t i = 0; i < n; ++i) {
          if (ptr[i * s] == In{0}) acc = Acc{0};
        }
        break;
      case ReduceOp::kAny:
        for (int64_t i = 0; i < n; ++i) {
          if (ptr[i * s] != In{0}) acc = Acc{1};
        }
        break;
      case ReduceOp::kProd:
        for (int64_t i = 0; i < n; ++i) {
          acc *= static_cast<Acc>(ptr[i * s]);
        }
        break;
      case ReduceOp::kMax:
        for (int64_t i = 0; i < n; ++i) {
          const Acc v = static_cast<Acc>(ptr[i * s]);
          if (v > acc || v != v) acc = v;
          if (acc != acc) break;
        }
        break;
      case ReduceOp::kMin:
        for (int64_t i = 0; i < n; ++i) {
          const Acc v = static_cast<Acc>(ptr[i * s]);
          if (v < acc || v != v) acc = v;
          if (acc != acc) break;
        }
        break;
    }
    for (int d = inner - 1; d >= 0; --d) {
      if (++counter[d] < p.red_sizes[d]) break;
      counter[d] = 0;
    }
  }
  if (op == ReduceOp::kMean) acc /= static_cast<Acc>(p.red_count);
  return acc;
}

// Floats accumulate in double and integers in int64 (bool as int64); float32
// runs into a float32 result in float lanes first (Note [Float sums]).
template <typename Out>
using AccOf =
    std::conditional_t<std::is_floating_point_v<Out>, double, int64_t>;
template <typename Out, typename In>
constexpr bool kFloatLanesFor = (std::is_same_v<Out, float> &&
                                 std::is_same_v<In, float>);

// Note [Outer sums]: a sum whose kept dims end in a stride-1 run (a bias
// gradient: (N, C) summed over N) walked each output element's column down
// the rows, one cache line per element added. This adds whole row segments
// into a block of accumulators instead, each element's terms in the same
// order as the column walk, so the result is bit for bit the same.
bool IsOuterSum(ReduceOp op, const ReducePlan& p) {
  constexpr int64_t kMinRun = 8;
  const int last = p.kept_ndim - 1;
  return (op == ReduceOp::kSum || op == ReduceOp::kMean) && last >= 0 &&
         p.kept_in_strides[last] == 1 && p.kept_sizes[last] >= kMinRun &&
         p.red_count > 0;
}

template <typename Acc, typename Out, typename In>
void OuterSum(ReduceOp op, const In* in, Out* out, const ReducePlan& p) {
  constexpr int64_t kBlock = 256;
  const int last = p.kept_ndim - 1, inner = p.red_ndim - 1;
  const int64_t len = p.kept_sizes[last], out_stride = p.kept_out_strides[last];
  const int64_t blocks = (len + kBlock - 1) / kBlock;
  ParallelFor(p.kept_count / len * blocks, p.red_count * kBlock,
              [&](int64_t b, int64_t e) {
                for (int64_t item = b; item < e; ++item) {
                  int64_t rem = item / blocks, in_off = 0, out_off = 0;
                  for (int d = last - 1; d >= 0; --d) {
                    const int64_t idx = rem % p.kept_sizes[d];
                    rem /= p.kept_sizes[d];
                    in_off += idx * p.kept_in_strides[d];
                    out_off += idx * p.kept_out_strides[d];
                  }
                  const int64_t first = item % blocks * kBlock;
                  const int64_t width = std::min(kBlock, len - first);
                  Acc acc[kBlock] = {};
                  int64_t counter[kMaxDims] = {};
                  for (int64_t r = 0; r < p.red_count; ++r) {
                    int64_t off = in_off + first;
                    for (int d = 0; d <= inner; ++d)
                      off += counter[d] * p.red_strides[d];
                    const In* row = in + off;
                    for (int64_t j = 0; j < width; ++j)
                      acc[j] += static_cast<Acc>(row[j]);
                    for (int d = inner; d >= 0; --d) {
                      if (++counter[d] < p.red_sizes[d]) break;
                      counter[d] = 0;
                    }
                  }
                  for (int64_t j = 0; j < width; ++j) {
                    if (op == ReduceOp::kMean)
                      acc[j] /= static_cast<Acc>(p.red_count);
                    out[out_off + (first + j) * out_stride] =
                        static_cast<Out>(acc[j]);
                  }
                }
              });
}

}  // namespace

absl::Status Reduce(ReduceOp op, const StridedView& in, const bool* reduced,
                    const StridedView& out) {
  const ReducePlan plan = MakePlan(in, reduced, out);
  if (plan.red_ndim == 0) {
    return absl::InternalError("Reduce called with no reduced dimension");
  }
  if ((op == ReduceOp::kMax || op == ReduceOp::kMin) && plan.red_count == 0) {
    return absl::InvalidArgumentError(
        "max/min of an empty dimension has no identity");
  }
  absl::Status inner_status;
  // A full sum of a contiguous tensor: split the one reduction over the
  // pool (the generic path parallelises over output elements only).
  if ((op == ReduceOp::kSum || op == ReduceOp::kMean) && plan.kept_count == 1 &&
      in.is_contiguous() && plan.red_count >= kParallelGrain) {
    absl::Status status = DispatchAll(out.dtype, "reduce", [&](auto out_tag) {
      using Out = decltype(out_tag);
      using Acc = AccOf<Out>;
      inner_status = DispatchAll(in.dtype, "reduce", [&](auto in_tag) {
        using In = decltype(in_tag);
        constexpr bool kFloat = kFloatLanesFor<Out, In>;
        const In* data = in.ptr<const In>();
        const int64_t n = plan.red_count;
        const int64_t chunks = 64, step = (n + chunks - 1) / chunks;
        Acc partial[chunks] = {};
        ParallelFor(chunks, step, [&](int64_t b, int64_t e) {
          for (int64_t c = b; c < e; ++c) {
            const int64_t lo = c * step, hi = std::min(n, lo + step);
            if (lo < hi) partial[c] = SumRun<Acc, kFloat>(data + lo, hi - lo);
          }
        });
        Acc acc = 0;
        for (int64_t c = 0; c < chunks; ++c) acc += partial[c];
        if (op == ReduceOp::kMean) acc /= static_cast<Acc>(n);
        *out.ptr<Out>() = static_cast<Out>(acc);
      });
    });
    return status.ok() ? inner_status : status;
  }
  absl::Status status = DispatchAll(out.dtype, "reduce", [&](auto out_tag) {
    using Out = decltype(out_tag);
    using Acc = AccOf<Out>;
    inner_status = DispatchAll(in.dtype, "reduce", [&](auto in_tag) {
      using In = decltype(in_tag);
      const In* in_data = in.ptr<const In>();
      Out* out_data = out.ptr<Out>();
      if (IsOuterSum(op, plan)) {
        OuterSum<Acc>(op, in_data, out_data, plan);
        return;
      }
      ParallelFor(plan.kept_count, plan.red_count, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          int64_t rem = k, in_off = 0, out_off = 0;
          for (int d = plan.kept_ndim - 1; d >= 0; --d) {
            const int64_t idx = rem % plan.kept_sizes[d];
            rem /= plan.kept_sizes[d];
            in_off += idx * plan.kept_in_strides[d];
            out_off += idx * plan.kept_out_strides[d];
          }
          const Acc acc = Accumulate<Acc, kFloatLanesFor<Out, In>>(
              op, in_data + in_off, plan);
          out_data[out_off] = static_cast<Out>(acc);
        }
      });
    });
  });
  return status.ok() ? inner_status : status;
}

}  // namespace cpu
}  // namespace tensord

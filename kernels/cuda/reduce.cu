// CUDA reductions (reduce.h): one thread block per output element, threads
// stride over the reduced elements and combine with a warp-shuffle block
// reduction. Two-pass statistics (var/std around the mean, logsumexp around
// the max) re-read the block's slice, which stays in L2 for typical sizes.
// Full reductions of very large tensors use a single block: a split-K
// variant with a workspace is the next step (BENCHMARKS.md).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/reduce.h"

namespace tensord {
namespace cuda {
namespace {

constexpr int kReduceThreads = 512;

// Kept dims (outputs) and reduced dims, with the input's strides for both
// and the output's for the kept ones.
struct ReduceShape {
  int outer_ndim = 0, inner_ndim = 0;
  int64_t outer_sizes[kMaxDims], outer_in[kMaxDims], outer_out[kMaxDims];
  int64_t inner_sizes[kMaxDims], inner_in[kMaxDims];
  int64_t num_out = 1, num_in = 1;

  __device__ void Outer(int64_t i, int64_t* in_off, int64_t* out_off) const {
    int64_t a = 0, b = 0;
    for (int d = outer_ndim - 1; d >= 0; --d) {
      const int64_t idx = i % outer_sizes[d];
      i /= outer_sizes[d];
      a += idx * outer_in[d];
      b += idx * outer_out[d];
    }
    *in_off = a;
    *out_off = b;
  }
  __device__ int64_t Inner(int64_t j) const {
    int64_t a = 0;
    for (int d = inner_ndim - 1; d >= 0; --d) {
      const int64_t idx = j % inner_sizes[d];
      j /= inner_sizes[d];
      a += idx * inner_in[d];
    }
    return a;
  }
};

ReduceShape MakeShape(const StridedView& in, const bool* reduced,
                      const StridedView& out) {
  ReduceShape s;
  for (int d = 0; d < in.ndim; ++d) {
    if (reduced[d]) {
      s.inner_sizes[s.inner_ndim] = in.sizes[d];
      s.inner_in[s.inner_ndim++] = in.strides[d];
      s.num_in *= in.sizes[d];
    } else {
      s.outer_sizes[s.outer_ndim] = in.sizes[d];
      s.outer_in[s.outer_ndim] = in.strides[d];
      s.outer_out[s.outer_ndim++] = out.strides[d];
      s.num_out *= in.sizes[d];
    }
  }
  return s;
}

// Combines one value per thread into thread 0's result.
template <typename T, typename F>
__device__ T BlockReduce(T v, F combine) {
  __shared__ T shared[32];  // one partial per warp (T is a plain scalar)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = combine(v, __shfl_down_sync(~0u, v, o));
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {  // at most 32 partials: combine them in order
    const int warps = (blockDim.x + 31) >> 5;
    for (int w = 1; w < warps; ++w) v = combine(v, shared[w]);
    shared[0] = v;
  }
  __syncthreads();
  v = shared[0];
  __syncthreads();  // shared[] may be reused by the next call
  return v;
}

__device__ double NanMax(double a, double b) {
  return (a != a || a > b) ? a : (b != b ? b : (a > b ? a : b));
}
__device__ double NanMin(double a, double b) {
  return (a != a || a < b) ? a : (b != b ? b : (a < b ? a : b));
}

// Kind: ReduceOp values 0..6, then StatOp values + 16.
constexpr int kStatBase = 16;

template <typename T>
__global__ void ReduceKernel(const T* __restrict__ in, ReduceShape s, int kind,
                             double param, void* out, DType out_dtype) {
  constexpr bool kInt = !kIsFloat<T>;
  for (int64_t o = blockIdx.x; o < s.num_out; o += gridDim.x) {
    int64_t base, out_off;
    s.Outer(o, &base, &out_off);
    auto at = [&](int64_t j) { return in[base + s.Inner(j)]; };
    Value result{0, 0, false};
    if (kind < kStatBase) {
      const auto op = static_cast<ReduceOp>(kind);
      if (kInt && (op == ReduceOp::kSum || op == ReduceOp::kProd ||
                   op == ReduceOp::kMax || op == ReduceOp::kMin)) {
        int64_t acc =
            op == ReduceOp::kProd  ? 1
            : op == ReduceOp::kMax ? std::numeric_limits<int64_t>::min()
            : op == ReduceOp::kMin ? std::numeric_limits<int64_t>::max()
                                   : 0;
        for (int64_t j = threadIdx.x; j < s.num_in; j += blockDim.x) {
          const int64_t x = static_cast<int64_t>(at(j));
          acc = op == ReduceOp::kSum    ? acc + x
                : op == ReduceOp::kProd ? acc * x
                : op == ReduceOp::kMax  ? (x > acc ? x : acc)
                                        : (x < acc ? x : acc);
        }
        acc = BlockReduce(acc, [op](int64_t a, int64_t b) {
          return op == ReduceOp::kSum    ? a + b
                 : op == ReduceOp::kProd ? a * b
                 : op == ReduceOp::kMax  ? (a > b ? a : b)
                                         : (a < b ? a : b);
        });
        result = Value{0, acc, true};
      } else if (op == ReduceOp::kAll || op == ReduceOp::kAny) {
        const bool all = op == ReduceOp::kAll;
        int flag = all ? 1 : 0;
        for (int64_t j = threadIdx.x; j < s.num_in; j += blockDim.x) {
          const bool nz = ToDouble(at(j)) != 0.0;
          flag = all ? (flag & nz) : (flag | nz);
        }
        flag = BlockReduce(
            flag, [all](int a, int b) { return all ? (a & b) : (a | b); });
        result = Value{0, flag, true};
      } else {
        double acc = op == ReduceOp::kProd  ? 1.0
                     : op == ReduceOp::kMax ? -INFINITY
                     : op == ReduceOp::kMin ? INFINITY
                                            : 0.0;
        for (int64_t j = threadIdx.x; j < s.num_in; j += blockDim.x) {
          const double x = ToDouble(at(j));
          acc = op == ReduceOp::kProd  ? acc * x
                : op == ReduceOp::kMax ? NanMax(acc, x)
                : op == ReduceOp::kMin ? NanMin(acc, x)
                                       : acc + x;
        }
        acc = BlockReduce(acc, [op](double a, double b) {
          return op == ReduceOp::kProd  ? a * b
                 : op == ReduceOp::kMax ? NanMax(a, b)
                 : op == ReduceOp::kMin ? NanMin(a, b)
                                        : a + b;
        });
        if (op == ReduceOp::kMean) acc /= static_cast<double>(s.num_in);
        result = Value{acc, 0, false};
      }
    } else {
      const auto op = static_cast<StatOp>(kind - kStatBase);
      if (op == StatOp::kArgMax || op == StatOp::kArgMin) {
        const bool is_max = op == StatOp::kArgMax;
        double best = ToDouble(at(0));
        int64_t best_j = 0;
        for (int64_t j = threadIdx.x; j < s.num_in; j += blockDim.x) {
          const double x = ToDouble(at(j));
          const bool better =
              best == best && (x != x || (is_max ? x > best : x < best));
          if (better) {
            best = x;
            best_j = j;
          }
        }
        // Ties and NaNs: the lowest index wins.
        struct Arg {
          double v;
          int64_t j;
        };
        __shared__ double vals[kReduceThreads];
        __shared__ int64_t idxs[kReduceThreads];
        vals[threadIdx.x] = best;
        idxs[threadIdx.x] = best_j;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w >>= 1) {
          if (threadIdx.x < w) {
            const Arg a{vals[threadIdx.x], idxs[threadIdx.x]};
            const Arg b{vals[threadIdx.x + w], idxs[threadIdx.x + w]};
            bool take_b;
            if (a.v != a.v || b.v != b.v) {
              take_b = (b.v != b.v) && (a.v == a.v || b.j < a.j);
            } else if (a.v == b.v) {
              take_b = b.j < a.j;
            } else {
              take_b = is_max ? b.v > a.v : b.v < a.v;
            }
            if (take_b) {
              vals[threadIdx.x] = b.v;
              idxs[threadIdx.x] = b.j;
            }
          }
          __syncthreads();
        }
        result = Value{0, idxs[0], true};
        __syncthreads();
      } else if (op == StatOp::kVar || op == StatOp::kStd) {
        double sum = 0;
        for (int64_t j = threadIdx.x; j < s.num_in; j += blockDim.x) {
          sum += ToDouble(at(j));
        }
        const double mean =
            BlockReduce(sum, [](double a, double b) { return a + b; }) /
            static_cast<double>(s.num_in);
        double sq = 0;
        for (int64_t j = threadIdx.x; j < s.num_in; j += blockDim.x) {
          const double d = ToDouble(at(j)) - mean;
          sq += d * d;
        }
        sq = BlockReduce(sq, [](double a, double b) { return a + b; });
        const double denom = static_cast<double>(s.num_in) - param;
        double var = denom > 0 ? sq / denom : NAN;
        result = Value{op == StatOp::kStd ? sqrt(var) : var, 0, false};
      } else if (op == StatOp::kLogSumExp) {
        double m = -INFINITY;
        for (int64_t j = threadIdx.x; j < s.num_in; j += blockDim.x) {
          m = NanMax(m, ToDouble(at(j)));
        }
        m = BlockReduce(m, NanMax);
        double sum = 0;
        if (!isinf(m)) {
          for (int64_t j = threadIdx.x; j < s.num_in; j += blockDim.x) {
            sum += exp(ToDouble(at(j)) - m);
          }
        }
        sum = BlockReduce(sum, [](double a, double b) { return a + b; });
        result = Value{isinf(m) ? m : m + log(sum), 0, false};
      } else {  // kNorm
        const double p = param;
        double acc = isinf(p) ? (p > 0 ? 0.0 : INFINITY) : 0.0;
        for (int64_t j = threadIdx.x; j < s.num_in; j += blockDim.x) {
          const double a = fabs(ToDouble(at(j)));
          if (isinf(p)) {
            acc = p > 0 ? NanMax(acc, a) : NanMin(acc, a);
          } else if (p == 0) {
            acc += a != 0 ? 1.0 : 0.0;
          } else if (p == 1) {
            acc += a;
          } else if (p == 2) {
            acc += a * a;
          } else {
            acc += pow(a, p);
          }
        }
        acc = BlockReduce(acc, [p](double a, double b) {
          return isinf(p) ? (p > 0 ? NanMax(a, b) : NanMin(a, b)) : a + b;
        });
        if (!isinf(p) && p != 0 && p != 1) {
          acc = p == 2 ? sqrt(acc) : pow(acc, 1.0 / p);
        }
        result = Value{acc, 0, false};
      }
    }
    if (threadIdx.x == 0) Store(out, out_dtype, out_off, result);
    __syncthreads();
  }
}

absl::Status Launch(int kind, const StridedView& in, const bool* reduced,
                    double param, const StridedView& out, StreamHandle stream,
                    const char* name) {
  const ReduceShape s = MakeShape(in, reduced, out);
  if (s.num_out == 0) return absl::OkStatus();
  const bool needs_element = kind >= kStatBase || kind == int(ReduceOp::kMax) ||
                             kind == int(ReduceOp::kMin);
  if (s.num_in == 0 && needs_element) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": cannot reduce over a zero-size dimension without identity"));
  }
  const int blocks =
      static_cast<int>(s.num_out < 65535 * 8 ? s.num_out : 65535 * 8);
  auto st = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH(
      in.dtype,
      return absl::UnimplementedError(absl::StrCat(
          name, " on cuda: unsupported dtype ", DTypeName(in.dtype))),
      ReduceKernel<scalar_t><<<blocks, kReduceThreads, 0, st>>>(
          in.ptr<const scalar_t>(), s, kind, param, out.data, out.dtype));
  return LaunchStatus(name);
}

}  // namespace

absl::Status Reduce(ReduceOp op, const StridedView& in, const bool* reduced,
                    const StridedView& out, StreamHandle stream) {
  return Launch(static_cast<int>(op), in, reduced, 0.0, out, stream,
                "reduction kernel");
}

absl::Status ReduceStat(StatOp op, const StridedView& in, const bool* reduced,
                        double param, const StridedView& out,
                        StreamHandle stream) {
  return Launch(kStatBase + static_cast<int>(op), in, reduced, param, out,
                stream, "reduction kernel");
}

}  // namespace cuda
}  // namespace tensord

// Fused cross entropy on CUDA (loss.h), line by line
// kernels/cpu/cross_entropy.cc (its header comment has the formulas): a
// block per position i reads the position's C logits (strided by S), takes
// the log-sum-exp and the smoothing sums in double through block
// reductions, and writes lse[i] and the position's loss; a one-block kernel
// then sums the total weight and the losses (the CPU's reductions, in a
// fixed order). The backward recomputes softmax from the logits and lse.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/loss.h"

namespace tensord {
namespace cuda {
namespace {

using Geometry = CrossEntropyGeometry;

// The smallest bad position wins: -1 (the reset value) is the largest
// unsigned value, so the report does not depend on block scheduling.
__device__ void NoteBad(int64_t* bad, int64_t position) {
  atomicMin(reinterpret_cast<unsigned long long*>(bad),
            static_cast<unsigned long long>(position));
}

// sum_c w_c (C without weight), every thread of the block.
template <typename T>
__device__ double WeightSum(const T* w, const Geometry& g) {
  if (w == nullptr) return static_cast<double>(g.c);
  double s = 0;
  for (int64_t k = threadIdx.x; k < g.c; k += blockDim.x) s += w[k];
  return BlockSum(s);
}

template <typename T>
__global__ void ForwardKernel(const T* __restrict__ x,
                              const int64_t* __restrict__ target,
                              const T* __restrict__ w, Geometry g,
                              T* __restrict__ loss, T* __restrict__ lse_out,
                              double* __restrict__ row_loss, int64_t* bad) {
  const int64_t rows = g.n * g.s;
  const double e = g.label_smoothing, cls = static_cast<double>(g.c);
  for (int64_t i = blockIdx.x; i < rows; i += gridDim.x) {
    const T* row = x + (i / g.s) * g.c * g.s + i % g.s;  // class k: k * g.s
    double lse = 0;
    if (!g.log_probs) {
      T m = -INFINITY;
      for (int64_t k = threadIdx.x; k < g.c; k += blockDim.x) {
        m = PickMax(m, row[k * g.s]);
      }
      m = BlockMax(m);
      if (isinf(m) && m < 0) m = 0;  // an all -inf row: NaN as PyTorch
      double sum = 0;
      for (int64_t k = threadIdx.x; k < g.c; k += blockDim.x) {
        sum += exp(row[k * g.s] - m);
      }
      lse = m + log(BlockSum(sum));
    }
    const int64_t t = target[i];  // the same for the whole block
    double l = 0;
    if (t != g.ignore_index) {
      if (t < 0 || t >= g.c) {
        if (threadIdx.x == 0) NoteBad(bad, i);
      } else {
        const double wt = w == nullptr ? 1.0 : double(w[t]);
        l = (1 - e) * wt * (lse - double(row[t * g.s]));
        if (e > 0) {
          double xs = 0;  // sum_c w_c x_c
          for (int64_t k = threadIdx.x; k < g.c; k += blockDim.x) {
            const double v = row[k * g.s];
            xs += w == nullptr ? v : double(w[k]) * v;
          }
          xs = BlockSum(xs);
          l += e / cls * (lse * WeightSum(w, g) - xs);
        }
      }
    }
    if (threadIdx.x == 0) {
      lse_out[i] = static_cast<T>(lse);
      if (g.reduction == LossReduction::kNone) {
        loss[i] = static_cast<T>(l);
      } else {
        row_loss[i] = l;
      }
    }
  }
}

// One block: the total weight of the valid targets and the reduced loss.
template <typename T>
__global__ void TotalKernel(const int64_t* __restrict__ target,
                            const T* __restrict__ w, Geometry g,
                            const double* __restrict__ row_loss,
                            T* __restrict__ loss, T* __restrict__ total_out) {
  const int64_t rows = g.n * g.s;
  const bool none = g.reduction == LossReduction::kNone;
  double total = 0, sum = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    const int64_t t = target[i];
    if (t != g.ignore_index && t >= 0 && t < g.c) {
      total += w == nullptr ? 1.0 : double(w[t]);
    }
    if (!none) sum += row_loss[i];
  }
  total = BlockSum(total);
  sum = BlockSum(sum);
  if (threadIdx.x != 0) return;
  *total_out = static_cast<T>(total);
  if (none) return;
  *loss =
      static_cast<T>(g.reduction == LossReduction::kSum ? sum : sum / total);
}

template <typename T>
__global__ void BackwardKernel(const T* __restrict__ grad,
                               const T* __restrict__ x,
                               const int64_t* __restrict__ target,
                               const T* __restrict__ w,
                               const T* __restrict__ lse,
                               const T* __restrict__ total, Geometry g,
                               T* __restrict__ dx) {
  const int64_t rows = g.n * g.s;
  const double e = g.label_smoothing, cls = static_cast<double>(g.c);
  const bool none = g.reduction == LossReduction::kNone;
  const double scale = none ? 1.0
                       : g.reduction == LossReduction::kSum
                           ? double(grad[0])
                           : double(grad[0]) / double(*total);
  const double wsum = WeightSum(w, g);
  for (int64_t i = blockIdx.x; i < rows; i += gridDim.x) {
    const int64_t base = (i / g.s) * g.c * g.s + i % g.s;  // class k: k * g.s
    const T* row = x + base;
    T* q = dx + base;
    const int64_t t = target[i];
    if (t == g.ignore_index || t < 0 || t >= g.c) {
      for (int64_t k = threadIdx.x; k < g.c; k += blockDim.x) q[k * g.s] = 0;
      continue;
    }
    const double gi = none ? double(grad[i]) : scale;
    const double wt = w == nullptr ? 1.0 : double(w[t]);
    const T a = static_cast<T>(gi * ((1 - e) * wt + e / cls * wsum));
    const T l = lse[i];
    const T sm = static_cast<T>(gi * e / cls);
    const T at_target = static_cast<T>(gi * (1 - e) * wt);
    for (int64_t k = threadIdx.x; k < g.c; k += blockDim.x) {
      const T wk = w == nullptr ? T(1) : w[k];
      // d(-logp_c)/d logp_c has no softmax term (log_probs).
      T v = g.log_probs ? -sm * wk : a * exp(row[k * g.s] - l) - sm * wk;
      if (k == t) v -= at_target;
      q[k * g.s] = v;
    }
  }
}

template <typename T>
const T* Opt(const StridedView& v) {
  return v.data == nullptr ? nullptr : v.ptr<const T>();
}

absl::Status Unsupported(const char* op, DType d) {
  return absl::UnimplementedError(
      absl::StrCat(op, " on cuda: unsupported dtype ", DTypeName(d)));
}

}  // namespace

absl::Status ResetBadTarget(int64_t* bad, StreamHandle stream) {
  TD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(bad, 0xff, sizeof(int64_t),
                                          static_cast<cudaStream_t>(stream)));
  return absl::OkStatus();
}

absl::Status CrossEntropyForward(
    const StridedView& logits, const StridedView& target,
    const StridedView& weight, const CrossEntropyGeometry& g,
    const StridedView& loss, const StridedView& lse,
    const StridedView& total_weight, double* scratch, int64_t* bad,
    StreamHandle stream) {
  const int64_t rows = g.n * g.s;
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      logits.dtype, return Unsupported("cross_entropy", logits.dtype), {
        using T = scalar_t;
        if (rows > 0) {
          ForwardKernel<T><<<RowBlocks(rows), kBlockThreads, 0, s>>>(
              logits.ptr<const T>(), target.ptr<const int64_t>(),
              Opt<T>(weight), g, loss.ptr<T>(), lse.ptr<T>(), scratch, bad);
        }
        // Always: no positions still write total 0 (and 0/0 under mean).
        TotalKernel<T><<<1, kBlockThreads, 0, s>>>(
            target.ptr<const int64_t>(), Opt<T>(weight), g, scratch,
            loss.ptr<T>(), total_weight.ptr<T>());
      });
  return LaunchStatus("cross_entropy kernel");
}

absl::Status CrossEntropyBackward(
    const StridedView& grad_loss, const StridedView& logits,
    const StridedView& target, const StridedView& weight,
    const StridedView& lse, const StridedView& total_weight,
    const CrossEntropyGeometry& g, const StridedView& grad_logits,
    StreamHandle stream) {
  const int64_t rows = g.n * g.s;
  if (rows == 0 || g.c == 0) return absl::OkStatus();  // grad_logits empty
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      logits.dtype, return Unsupported("cross_entropy_backward", logits.dtype),
      BackwardKernel<scalar_t><<<RowBlocks(rows), kBlockThreads, 0, s>>>(
          grad_loss.ptr<const scalar_t>(), logits.ptr<const scalar_t>(),
          target.ptr<const int64_t>(), Opt<scalar_t>(weight),
          lse.ptr<const scalar_t>(), total_weight.ptr<const scalar_t>(), g,
          grad_logits.ptr<scalar_t>()));
  return LaunchStatus("cross_entropy_backward kernel");
}

}  // namespace cuda
}  // namespace tensord

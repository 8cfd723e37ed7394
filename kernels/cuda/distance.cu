// cdist/pdist and their gradients, and histc, on CUDA (distance.h): the CPU
// kernels' loops (kernels/cpu/distance.cc, histogram.cc) with one thread per
// output element, summing in double in the CPU's order, so both devices
// give the same values (up to the device's pow and sqrt).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/distance.h"
#include "kernels/cuda/loops.cuh"
#include "runtime/core/distance_math.h"
#include "runtime/core/histogram_math.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cuda {
namespace {

// [batch, rows1, cols] against [batch, rows2, cols].
struct Dims {
  int64_t batch = 1, rows1 = 0, rows2 = 0, cols = 0;
};

Dims DimsOf(const StridedView& x1, const StridedView& x2) {
  Dims d;
  for (int k = 0; k + 2 < x1.ndim; ++k) d.batch *= x1.sizes[k];
  d.rows1 = x1.sizes[x1.ndim - 2];
  d.rows2 = x2.sizes[x2.ndim - 2];
  d.cols = x1.sizes[x1.ndim - 1];
  return d;
}

// a - b rounded to T, as the CPU (kernels/cpu/distance.cc's Diff).
template <typename T>
__device__ __forceinline__ double Diff(T a, T b) {
  return static_cast<double>(static_cast<T>(a - b));
}

template <typename T, DistanceNorm K>
__global__ void CdistKernel(const T* __restrict__ x1, const T* __restrict__ x2,
                            T* __restrict__ out, Dims d, double p) {
  TD_GRID_STRIDE(t, d.batch * d.rows1 * d.rows2) {
    const int64_t r = t / d.rows2, j = t % d.rows2, b = r / d.rows1;
    const T* a = x1 + r * d.cols;
    const T* c = x2 + (b * d.rows2 + j) * d.cols;
    double acc = 0;
    for (int64_t k = 0; k < d.cols; ++k) {
      acc = DistanceAdd<K, false>(acc, Diff(a[k], c[k]), p);
    }
    out[t] = static_cast<T>(DistanceFinish<K>(acc, p));
  }
}

// Thread (r, k): x1's row r, coordinate k, over x2's rows of r's batch.
template <typename T, DistanceNorm K>
__global__ void CdistBackwardKernel(const T* __restrict__ grad,
                                    const T* __restrict__ x1,
                                    const T* __restrict__ x2,
                                    const T* __restrict__ dist,
                                    T* __restrict__ out, Dims d, double p) {
  TD_GRID_STRIDE(t, d.batch * d.rows1 * d.cols) {
    const int64_t r = t / d.cols, k = t % d.cols, b = r / d.rows1;
    const T a = x1[t];
    double acc = 0;
    for (int64_t j = 0; j < d.rows2; ++j) {
      const T c = x2[(b * d.rows2 + j) * d.cols + k];
      acc += DistanceGrad<K>(Diff(a, c), grad[r * d.rows2 + j],
                             dist[r * d.rows2 + j], p);
    }
    out[t] = static_cast<T>(acc);
  }
}

// The pair (i, j) at position t of pdist's output (distance_math.h's
// PairStart), from the closed form, corrected for rounding.
__device__ void PairAt(int64_t t, int64_t n, int64_t* i, int64_t* j) {
  const double n2 = n - 0.5;
  int64_t r = static_cast<int64_t>(n2 - sqrt(n2 * n2 - 2.0 * t - 1.0));
  if (r < 0) r = 0;
  while (r > 0 && PairStart(r, n) > t) --r;
  while (r + 1 < n && PairStart(r + 1, n) <= t) ++r;
  *i = r;
  *j = t - PairStart(r, n) + r + 1;
}

template <typename T, DistanceNorm K>
__global__ void PdistKernel(const T* __restrict__ x, T* __restrict__ out,
                            int64_t n, int64_t m, double p) {
  TD_GRID_STRIDE(t, n * (n - 1) / 2) {
    int64_t i, j;
    PairAt(t, n, &i, &j);
    double acc = 0;
    for (int64_t k = 0; k < m; ++k) {
      acc = DistanceAdd<K, true>(acc, Diff(x[i * m + k], x[j * m + k]), p);
    }
    out[t] = static_cast<T>(DistanceFinish<K>(acc, p));
  }
}

// Thread (i, k) sums row i's n - 1 pairs, each from i's end (the gradients
// are odd in the difference: Note [Distance norms]), as the CPU does.
template <typename T, DistanceNorm K>
__global__ void PdistBackwardKernel(const T* __restrict__ grad,
                                    const T* __restrict__ x,
                                    const T* __restrict__ dist,
                                    T* __restrict__ out, int64_t n, int64_t m,
                                    double p) {
  TD_GRID_STRIDE(t, n * m) {
    const int64_t i = t / m, k = t % m;
    const T a = x[t];
    double acc = 0;
    for (int64_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const int64_t q =
          i < j ? PairStart(i, n) + (j - i - 1) : PairStart(j, n) + (i - j - 1);
      acc += DistanceGrad<K>(Diff(a, x[j * m + k]), grad[q], dist[q], p);
    }
    out[t] = static_cast<T>(acc);
  }
}

// histc: the element's bin in its dtype's arithmetic (Note [Histc bins]).
// (The conversions are host and device functions: the edges are rounded on
// the host.)
template <typename T>
struct RoundTo;
template <>
struct RoundTo<__half> {
  __host__ __device__ float operator()(float v) const {
    return __half2float(__float2half_rn(v));
  }
};
template <>
struct RoundTo<__nv_bfloat16> {
  __host__ __device__ float operator()(float v) const {
    return __bfloat162float(__float2bfloat16_rn(v));
  }
};
template <>
struct RoundTo<float> {
  __host__ __device__ float operator()(float v) const { return v; }
};
template <>
struct RoundTo<double> {
  __host__ __device__ double operator()(double v) const { return v; }
};

template <typename T, typename C>
__global__ void HistcKernel(const T* __restrict__ x, int64_t n, C left, C right,
                            int64_t bins,
                            unsigned long long* __restrict__ counts) {
  TD_GRID_STRIDE(i, n) {
    const int64_t pos = HistcBin(static_cast<C>(Computed(x[i])), left, right,
                                 bins, RoundTo<T>{});
    if (pos >= 0) atomicAdd(counts + pos, 1ULL);
  }
}

template <typename T>
__global__ void CountsKernel(const unsigned long long* __restrict__ counts,
                             int64_t bins, T* __restrict__ out) {
  TD_GRID_STRIDE(b, bins) {
    out[b] = Stored<T>(static_cast<typename Acc<T>::type>(counts[b]));
  }
}

template <typename T>
absl::Status LaunchHistc(const StridedView& in, double lo, double hi,
                         const StridedView& out, uint64_t* counts,
                         cudaStream_t s) {
  using C = typename Acc<T>::type;
  const int64_t n = in.numel(), bins = out.numel();
  auto* words = reinterpret_cast<unsigned long long*>(counts);
  TD_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(words, 0, bins * sizeof(unsigned long long), s));
  const RoundTo<T> round;
  // The outer edges as PyTorch's linspace writes them: the range's ends
  // converted to the element type.
  const C left = round(static_cast<C>(lo)), right = round(static_cast<C>(hi));
  if (n > 0) {
    HistcKernel<T, C><<<BlocksFor(n, 4), kThreads, 0, s>>>(
        in.ptr<const T>(), n, left, right, bins, words);
    TD_RETURN_IF_ERROR(LaunchStatus("histc"));
  }
  CountsKernel<T>
      <<<BlocksFor(bins), kThreads, 0, s>>>(words, bins, out.ptr<T>());
  return LaunchStatus("histc");
}

}  // namespace

absl::Status Cdist(const StridedView& x1, const StridedView& x2, double p,
                   const StridedView& out, StreamHandle stream) {
  const Dims d = DimsOf(x1, x2);
  const int64_t n = d.batch * d.rows1 * d.rows2;
  if (n == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      out.dtype, return absl::UnimplementedError("cdist: float32/64 only"),
      WithDistanceNorm(p, [&](auto norm) {
        CdistKernel<scalar_t, decltype(norm)::value>
            <<<BlocksFor(n), kThreads, 0, s>>>(x1.ptr<const scalar_t>(),
                                               x2.ptr<const scalar_t>(),
                                               out.ptr<scalar_t>(), d, p);
      }));
  return LaunchStatus("cdist");
}

absl::Status CdistBackward(const StridedView& grad, const StridedView& x1,
                           const StridedView& x2, const StridedView& dist,
                           double p, const StridedView& out,
                           StreamHandle stream) {
  const Dims d = DimsOf(x1, x2);
  const int64_t n = d.batch * d.rows1 * d.cols;
  if (n == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      out.dtype,
      return absl::UnimplementedError("_cdist_backward: float32/64 only"),
      WithDistanceNorm(p, [&](auto norm) {
        CdistBackwardKernel<scalar_t, decltype(norm)::value>
            <<<BlocksFor(n), kThreads, 0, s>>>(
                grad.ptr<const scalar_t>(), x1.ptr<const scalar_t>(),
                x2.ptr<const scalar_t>(), dist.ptr<const scalar_t>(),
                out.ptr<scalar_t>(), d, p);
      }));
  return LaunchStatus("_cdist_backward");
}

absl::Status Pdist(const StridedView& x, double p, const StridedView& out,
                   StreamHandle stream) {
  const int64_t n = x.sizes[0], m = x.sizes[1];
  if (n < 2) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      out.dtype, return absl::UnimplementedError("pdist: float32/64 only"),
      WithDistanceNorm(p, [&](auto norm) {
        PdistKernel<scalar_t, decltype(norm)::value>
            <<<BlocksFor(n * (n - 1) / 2), kThreads, 0, s>>>(
                x.ptr<const scalar_t>(), out.ptr<scalar_t>(), n, m, p);
      }));
  return LaunchStatus("pdist");
}

absl::Status PdistBackward(const StridedView& grad, const StridedView& x,
                           const StridedView& dist, double p,
                           const StridedView& out, StreamHandle stream) {
  const int64_t n = x.sizes[0], m = x.sizes[1];
  if (n * m == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      out.dtype,
      return absl::UnimplementedError("_pdist_backward: float32/64 only"),
      WithDistanceNorm(p, [&](auto norm) {
        PdistBackwardKernel<scalar_t, decltype(norm)::value>
            <<<BlocksFor(n * m), kThreads, 0, s>>>(
                grad.ptr<const scalar_t>(), x.ptr<const scalar_t>(),
                dist.ptr<const scalar_t>(), out.ptr<scalar_t>(), n, m, p);
      }));
  return LaunchStatus("_pdist_backward");
}

absl::Status Histc(const StridedView& in, double lo, double hi,
                   const StridedView& out, uint64_t* counts,
                   StreamHandle stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (in.dtype) {
    case DType::kFloat32:
      return LaunchHistc<float>(in, lo, hi, out, counts, s);
    case DType::kFloat64:
      return LaunchHistc<double>(in, lo, hi, out, counts, s);
    case DType::kFloat16:
      return LaunchHistc<__half>(in, lo, hi, out, counts, s);
    case DType::kBFloat16:
      return LaunchHistc<__nv_bfloat16>(in, lo, hi, out, counts, s);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("histc(): expected a floating-point input, got ",
                       DTypeName(in.dtype)));
  }
}

}  // namespace cuda
}  // namespace tensord

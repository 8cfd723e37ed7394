// layer_norm and batch_norm on CUDA (norm.h), line by line the CPU kernels
// (kernels/cpu/layer_norm.cc, batch_norm.cc): a block per row or channel
// whose sums run in double through block_reduce.cuh, the elementwise steps
// in the element type with the CPU's statistics rounded to it the same way.
// The layer_norm parameter gradients take a thread per column summing the
// rows in order (coalesced across the columns, no atomics, deterministic).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/norm.h"

namespace tensord {
namespace cuda {
namespace {

template <typename T>
const T* Opt(const StridedView& v) {
  return v.data == nullptr ? nullptr : v.ptr<const T>();
}

template <typename T>
T* OptOut(const StridedView& v) {
  return v.data == nullptr ? nullptr : v.ptr<T>();
}

absl::Status Unsupported(const char* op, DType d) {
  return absl::UnimplementedError(
      absl::StrCat(op, " on cuda: unsupported dtype ", DTypeName(d)));
}

template <typename T>
__global__ void LayerNormForwardKernel(const T* __restrict__ x, int64_t m,
                                       int64_t n, const T* __restrict__ w,
                                       const T* __restrict__ b, double eps,
                                       T* __restrict__ y, T* __restrict__ mean,
                                       T* __restrict__ rstd) {
  for (int64_t r = blockIdx.x; r < m; r += gridDim.x) {
    const T* p = x + r * n;
    T* q = y + r * n;
    double s = 0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) s += p[k];
    const double mu = BlockSum(s) / static_cast<double>(n);
    const T tm = static_cast<T>(mu);
    double sq = 0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      const T d = p[k] - tm;
      sq += d * d;
    }
    sq = BlockSum(sq);
    const T ts = static_cast<T>(1.0 / sqrt(sq / static_cast<double>(n) + eps));
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      // As the CPU: a bias counts only with a weight (inputs are
      // positional, so a row never passes one without the other).
      if (w != nullptr && b != nullptr) {
        q[k] = (p[k] - tm) * ts * w[k] + b[k];
      } else if (w != nullptr) {
        q[k] = (p[k] - tm) * ts * w[k];
      } else {
        q[k] = (p[k] - tm) * ts;
      }
    }
    if (threadIdx.x == 0) mean[r] = tm, rstd[r] = ts;
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w.
template <typename T>
__global__ void LayerNormInputGradKernel(const T* __restrict__ dy,
                                         const T* __restrict__ x, int64_t m,
                                         int64_t n, const T* __restrict__ mean,
                                         const T* __restrict__ rstd,
                                         const T* __restrict__ w,
                                         T* __restrict__ dx) {
  for (int64_t r = blockIdx.x; r < m; r += gridDim.x) {
    const T* g = dy + r * n;
    const T* p = x + r * n;
    const T tm = mean[r], ts = rstd[r];
    double a = 0, b = 0;  // sum(g * xhat), sum(g)
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      const T gw = w != nullptr ? g[k] * w[k] : g[k];
      a += gw * ((p[k] - tm) * ts);
      b += gw;
    }
    a = BlockSum(a);
    b = BlockSum(b);
    const T ka = static_cast<T>(a / static_cast<double>(n));
    const T kb = static_cast<T>(b / static_cast<double>(n));
    T* q = dx + r * n;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      const T gw = w != nullptr ? g[k] * w[k] : g[k];
      q[k] = ts * (gw - kb - (p[k] - tm) * ts * ka);
    }
  }
}

// dw[k] = sum_r dy * xhat, db[k] = sum_r dy, in double.
template <typename T>
__global__ void LayerNormParamGradKernel(const T* __restrict__ dy,
                                         const T* __restrict__ x, int64_t m,
                                         int64_t n, const T* __restrict__ mean,
                                         const T* __restrict__ rstd,
                                         T* __restrict__ dw,
                                         T* __restrict__ db) {
  TD_GRID_STRIDE(k, n) {
    double sw = 0, sb = 0;
    for (int64_t r = 0; r < m; ++r) {
      const T g = dy[r * n + k];
      sw += double(g * ((x[r * n + k] - mean[r]) * rstd[r]));
      sb += double(g);
    }
    if (dw != nullptr) dw[k] = static_cast<T>(sw);
    if (db != nullptr) db[k] = static_cast<T>(sb);
  }
}

// Element j of channel c in [N, C, S], j over N * S.
__device__ __forceinline__ int64_t ChannelOffset(int64_t j, int64_t c,
                                                 int64_t channels, int64_t s) {
  return ((j / s) * channels + c) * s + j % s;
}

template <typename T>
__global__ void BatchNormForwardKernel(
    const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
    double eps, int64_t batch, int64_t channels, int64_t s, T* __restrict__ y,
    T* __restrict__ mean_out, T* __restrict__ var_out) {
  const int64_t count = batch * s;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    double sum = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      sum += x[ChannelOffset(j, c, channels, s)];
    }
    const double m = static_cast<double>(count);
    const double mean = BlockSum(sum) / m;
    const T tm = static_cast<T>(mean);
    double sq = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const T v = x[ChannelOffset(j, c, channels, s)];
      sq += (v - tm) * (v - tm);
    }
    const double var = BlockSum(sq) / m;
    const double invstd = 1.0 / sqrt(var + eps);
    const double scale = invstd * (w != nullptr ? double{w[c]} : 1.0);
    const double shift = (b != nullptr ? double{b[c]} : 0.0) - mean * scale;
    const T ts = static_cast<T>(scale), tsh = static_cast<T>(shift);
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t off = ChannelOffset(j, c, channels, s);
      y[off] = x[off] * ts + tsh;
    }
    if (threadIdx.x == 0) {
      mean_out[c] = static_cast<T>(mean);
      var_out[c] = static_cast<T>(var);
    }
  }
}

template <typename T>
__global__ void BatchNormBackwardKernel(
    const T* __restrict__ dy, const T* __restrict__ x,
    const T* __restrict__ mean_in, const T* __restrict__ var_in,
    const T* __restrict__ w, double eps, int64_t batch, int64_t channels,
    int64_t s, T* __restrict__ dx, T* __restrict__ dw, T* __restrict__ db) {
  const int64_t count = batch * s;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    const T tm = mean_in[c];
    double sum_dy = 0, sum_dy_xmu = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t off = ChannelOffset(j, c, channels, s);
      sum_dy += dy[off];
      sum_dy_xmu += dy[off] * (x[off] - tm);
    }
    sum_dy = BlockSum(sum_dy);
    sum_dy_xmu = BlockSum(sum_dy_xmu);
    const double invstd = 1.0 / sqrt(double{var_in[c]} + eps);
    const double wc = w != nullptr ? double{w[c]} : 1.0;
    if (threadIdx.x == 0) {
      if (dw != nullptr) dw[c] = static_cast<T>(sum_dy_xmu * invstd);
      if (db != nullptr) db[c] = static_cast<T>(sum_dy);
    }
    if (dx == nullptr) continue;
    // PyTorch's formula, as kernels/cpu/batch_norm.cc.
    const double m = static_cast<double>(count);
    const T k = static_cast<T>(invstd * invstd * sum_dy_xmu / m);
    const T mdy = static_cast<T>(sum_dy / m);
    const T scale = static_cast<T>(invstd * wc);
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t off = ChannelOffset(j, c, channels, s);
      dx[off] = (dy[off] - mdy - (x[off] - tm) * k) * scale;
    }
  }
}

struct Dims {
  int64_t n, c, s;
};

Dims DimsOf(const StridedView& x) {
  Dims d{x.sizes[0], x.ndim > 1 ? x.sizes[1] : 1, 1};
  for (int i = 2; i < x.ndim; ++i) d.s *= x.sizes[i];
  return d;
}

}  // namespace

absl::Status LayerNormForward(const StridedView& x, int64_t m, int64_t n,
                              const StridedView& weight,
                              const StridedView& bias, double eps,
                              const StridedView& y, const StridedView& mean,
                              const StridedView& rstd, StreamHandle stream) {
  if (m == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      x.dtype, return Unsupported("layer_norm", x.dtype),
      LayerNormForwardKernel<scalar_t><<<RowBlocks(m), kBlockThreads, 0, s>>>(
          x.ptr<const scalar_t>(), m, n, Opt<scalar_t>(weight),
          Opt<scalar_t>(bias), eps, y.ptr<scalar_t>(), mean.ptr<scalar_t>(),
          rstd.ptr<scalar_t>()));
  return LaunchStatus("layer_norm kernel");
}

absl::Status LayerNormBackward(const StridedView& dy, const StridedView& x,
                               int64_t m, int64_t n, const StridedView& mean,
                               const StridedView& rstd,
                               const StridedView& weight, const StridedView& dx,
                               const StridedView& dweight,
                               const StridedView& dbias, StreamHandle stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const bool params = dweight.data != nullptr || dbias.data != nullptr;
  TD_CUDA_DISPATCH_FLOAT(
      x.dtype, return Unsupported("layer_norm_backward", x.dtype), {
        using T = scalar_t;
        if (m > 0 && dx.data != nullptr) {
          LayerNormInputGradKernel<T><<<RowBlocks(m), kBlockThreads, 0, s>>>(
              dy.ptr<const T>(), x.ptr<const T>(), m, n, mean.ptr<const T>(),
              rstd.ptr<const T>(), Opt<T>(weight), dx.ptr<T>());
        }
        // m == 0: the loop over no rows writes the zeros the CPU writes.
        if (params && n > 0) {
          LayerNormParamGradKernel<T><<<BlocksFor(n), kThreads, 0, s>>>(
              dy.ptr<const T>(), x.ptr<const T>(), m, n, mean.ptr<const T>(),
              rstd.ptr<const T>(), OptOut<T>(dweight), OptOut<T>(dbias));
        }
      });
  // cudaGetLastError keeps a failed launch's error past later launches.
  return LaunchStatus("layer_norm_backward kernel");
}

absl::Status BatchNormForward(const StridedView& x, const StridedView& weight,
                              const StridedView& bias, double eps,
                              const StridedView& y, const StridedView& mean,
                              const StridedView& var, StreamHandle stream) {
  const Dims d = DimsOf(x);
  if (d.c == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      x.dtype, return Unsupported("batch_norm", x.dtype),
      BatchNormForwardKernel<scalar_t><<<RowBlocks(d.c), kBlockThreads, 0, s>>>(
          x.ptr<const scalar_t>(), Opt<scalar_t>(weight), Opt<scalar_t>(bias),
          eps, d.n, d.c, d.s, y.ptr<scalar_t>(), mean.ptr<scalar_t>(),
          var.ptr<scalar_t>()));
  return LaunchStatus("batch_norm kernel");
}

absl::Status BatchNormBackward(const StridedView& dy, const StridedView& x,
                               const StridedView& mean, const StridedView& var,
                               const StridedView& weight, double eps,
                               const StridedView& dx,
                               const StridedView& dweight,
                               const StridedView& dbias, StreamHandle stream) {
  const Dims d = DimsOf(x);
  if (d.c == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      x.dtype, return Unsupported("batch_norm_backward", x.dtype),
      BatchNormBackwardKernel<scalar_t>
      <<<RowBlocks(d.c), kBlockThreads, 0, s>>>(
          dy.ptr<const scalar_t>(), x.ptr<const scalar_t>(),
          mean.ptr<const scalar_t>(), var.ptr<const scalar_t>(),
          Opt<scalar_t>(weight), eps, d.n, d.c, d.s, OptOut<scalar_t>(dx),
          OptOut<scalar_t>(dweight), OptOut<scalar_t>(dbias)));
  return LaunchStatus("batch_norm_backward kernel");
}

}  // namespace cuda
}  // namespace tensord

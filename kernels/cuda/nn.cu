// Softmax on CUDA (nn.h). Rows along the softmax dim are strided by
// `inner`; one block per (outer, inner) row when the dim is long (block
// reductions for the max and the sum), one thread per row when it is short
// or when inner > 1 keeps neighbouring threads on neighbouring addresses.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/nn.h"

namespace tensord {
namespace cuda {
namespace {

constexpr int kRowThreads = 256;

template <typename T>
__device__ T BlockAll(T v, bool is_max) {
  __shared__ T shared[kRowThreads / 32];
  for (int o = 16; o > 0; o >>= 1) {
    const T other = __shfl_xor_sync(~0u, v, o);
    v = is_max ? (other > v ? other : v) : v + other;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T r = shared[0];
  for (int w = 1; w < kRowThreads / 32; ++w) {
    r = is_max ? (shared[w] > r ? shared[w] : r) : r + shared[w];
  }
  __syncthreads();
  return r;
}

// One block per row (inner == 1, long rows).
template <typename T>
__global__ void SoftmaxRows(const T* __restrict__ in, T* __restrict__ out,
                            int64_t rows, int64_t dim, bool log) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = in + r * dim;
    T* y = out + r * dim;
    T m = -INFINITY;
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      m = x[j] > m || x[j] != x[j] ? x[j] : m;
    }
    m = BlockAll(m, true);
    T sum = 0;
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      sum += exp(x[j] - m);
    }
    sum = BlockAll(sum, false);
    const T log_sum = ::log(sum);
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      y[j] = log ? x[j] - m - log_sum : exp(x[j] - m) / sum;
    }
  }
}

// One thread per (outer, inner) row.
template <typename T>
__global__ void SoftmaxStrided(const T* __restrict__ in, T* __restrict__ out,
                               int64_t outer, int64_t dim, int64_t inner,
                               bool log) {
  TD_GRID_STRIDE(r, outer * inner) {
    const int64_t o = r / inner, i = r % inner;
    const T* x = in + o * dim * inner + i;
    T* y = out + o * dim * inner + i;
    T m = -INFINITY;
    for (int64_t j = 0; j < dim; ++j) {
      const T v = x[j * inner];
      m = v > m || v != v ? v : m;
    }
    T sum = 0;
    for (int64_t j = 0; j < dim; ++j) sum += exp(x[j * inner] - m);
    const T log_sum = ::log(sum);
    for (int64_t j = 0; j < dim; ++j) {
      const T v = x[j * inner];
      y[j * inner] = log ? v - m - log_sum : exp(v - m) / sum;
    }
  }
}

}  // namespace

absl::Status Softmax(const StridedView& in, int64_t outer, int64_t dim,
                     int64_t inner, bool log, const StridedView& out,
                     StreamHandle stream) {
  if (outer * dim * inner == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      in.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "softmax on cuda: unsupported dtype ", DTypeName(in.dtype))),
      {
        if (inner == 1 && dim >= 128) {
          const int64_t rows = outer;
          const int blocks =
              static_cast<int>(rows < 65535 * 8 ? rows : 65535 * 8);
          SoftmaxRows<scalar_t><<<blocks, kRowThreads, 0, s>>>(
              in.ptr<const scalar_t>(), out.ptr<scalar_t>(), rows, dim, log);
        } else {
          SoftmaxStrided<scalar_t>
              <<<BlocksFor(outer * inner), kThreads, 0, s>>>(
                  in.ptr<const scalar_t>(), out.ptr<scalar_t>(), outer, dim,
                  inner, log);
        }
      });
  return LaunchStatus("softmax kernel");
}

namespace {

// The input window [r0, r1) x [c0, c1) of output (i, j) and its divisor:
// `kind` 1 avg (clipped to the padded input; count_include_pad as PyTorch;
// a non-zero `divisor` overrides the count), 2 adaptive avg.
struct AvgWindow {
  int64_t r0, r1, c0, c1, count;
};
__device__ __forceinline__ AvgWindow AvgWindowAt(int64_t i, int64_t j,
                                                 int64_t h, int64_t wd,
                                                 const PoolWindow& w, int kind,
                                                 bool count_include_pad,
                                                 int64_t divisor) {
  AvgWindow a;
  if (kind == 1) {
    a.r0 = i * w.sh - w.ph, a.c0 = j * w.sw - w.pw;
    a.r1 = min(a.r0 + w.kh, h + w.ph), a.c1 = min(a.c0 + w.kw, wd + w.pw);
    const int64_t padded = (a.r1 - a.r0) * (a.c1 - a.c0);
    a.r0 = max(a.r0, int64_t{0}), a.c0 = max(a.c0, int64_t{0});
    a.r1 = min(a.r1, h), a.c1 = min(a.c1, wd);
    a.count = divisor != 0        ? divisor
              : count_include_pad ? padded
                                  : (a.r1 - a.r0) * (a.c1 - a.c0);
  } else {
    a.r0 = i * h / w.oh, a.r1 = ((i + 1) * h + w.oh - 1) / w.oh;
    a.c0 = j * wd / w.ow, a.c1 = ((j + 1) * wd + w.ow - 1) / w.ow;
    a.count = (a.r1 - a.r0) * (a.c1 - a.c0);
  }
  return a;
}

// One thread per output element (plane, i, j). `kind`: 0 max, 1 avg,
// 2 adaptive avg. Backward: `grad` given, adds into `gin`.
template <typename T>
__global__ void PoolKernel(const T* __restrict__ x, T* __restrict__ y,
                           const T* __restrict__ grad, T* __restrict__ gin,
                           int64_t planes, int64_t h, int64_t wd, PoolWindow w,
                           int kind, bool count_include_pad, int64_t divisor) {
  TD_GRID_STRIDE(e, planes * w.oh * w.ow) {
    const int64_t j = e % w.ow, i = (e / w.ow) % w.oh, p = e / (w.oh * w.ow);
    const T* xp = x == nullptr ? nullptr : x + p * h * wd;
    T* gp = gin == nullptr ? nullptr : gin + p * h * wd;
    if (kind == 0) {
      T best = -INFINITY;
      int64_t at = -1;
      for (int64_t a = 0; a < w.kh; ++a) {
        const int64_t r = i * w.sh - w.ph + a * w.dh;
        if (r < 0 || r >= h) continue;
        for (int64_t b = 0; b < w.kw; ++b) {
          const int64_t c = j * w.sw - w.pw + b * w.dw;
          if (c < 0 || c >= wd) continue;
          const T v = xp[r * wd + c];
          if (at < 0 || v != v || (best == best && v > best)) {
            best = v;
            at = r * wd + c;
          }
        }
      }
      if (grad == nullptr) {
        y[e] = best;
      } else if (at >= 0) {
        atomicAdd(gp + at, grad[e]);
      }
      continue;
    }
    const AvgWindow a =
        AvgWindowAt(i, j, h, wd, w, kind, count_include_pad, divisor);
    if (grad == nullptr) {
      double s = 0;
      for (int64_t r = a.r0; r < a.r1; ++r) {
        for (int64_t c = a.c0; c < a.c1; ++c) s += xp[r * wd + c];
      }
      y[e] = static_cast<T>(s / static_cast<double>(a.count));
    } else {
      const T g = grad[e] / static_cast<T>(a.count);
      for (int64_t r = a.r0; r < a.r1; ++r) {
        for (int64_t c = a.c0; c < a.c1; ++c) atomicAdd(gp + r * wd + c, g);
      }
    }
  }
}

// int64 avg_pool2d (forward only: integers have no gradient): an int64 sum
// (wrapping) divided by the count with C's truncation, as the CPU kernel
// and PyTorch's CPU one.
__global__ void AvgPoolInt64Kernel(const int64_t* __restrict__ x,
                                   int64_t* __restrict__ y, int64_t planes,
                                   int64_t h, int64_t wd, PoolWindow w,
                                   bool count_include_pad, int64_t divisor) {
  TD_GRID_STRIDE(e, planes * w.oh * w.ow) {
    const int64_t j = e % w.ow, i = (e / w.ow) % w.oh, p = e / (w.oh * w.ow);
    const int64_t* xp = x + p * h * wd;
    const AvgWindow a =
        AvgWindowAt(i, j, h, wd, w, 1, count_include_pad, divisor);
    uint64_t s = 0;
    for (int64_t r = a.r0; r < a.r1; ++r) {
      for (int64_t c = a.c0; c < a.c1; ++c) {
        s += static_cast<uint64_t>(xp[r * wd + c]);
      }
    }
    y[e] = static_cast<int64_t>(s) / a.count;
  }
}

absl::Status LaunchPool(const StridedView* x, const StridedView* y,
                        const StridedView* grad, const StridedView* gin,
                        PoolWindow w, int kind, bool count_include_pad,
                        int64_t divisor, StreamHandle stream) {
  const StridedView& image = gin != nullptr ? *gin : *x;
  const int64_t planes = image.sizes[0] * image.sizes[1];
  const int64_t h = image.sizes[2], wd = image.sizes[3];
  auto s = static_cast<cudaStream_t>(stream);
  if (gin != nullptr) {
    TD_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(gin->data, 0, gin->numel() * ItemSize(gin->dtype), s));
  }
  const int64_t n = planes * w.oh * w.ow;
  if (n == 0) return absl::OkStatus();
  TD_CUDA_DISPATCH_FLOAT(
      image.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "pooling on cuda: unsupported dtype ", DTypeName(image.dtype))),
      PoolKernel<scalar_t><<<BlocksFor(n), kThreads, 0, s>>>(
          x ? x->ptr<const scalar_t>() : nullptr,
          y ? y->ptr<scalar_t>() : nullptr,
          grad ? grad->ptr<const scalar_t>() : nullptr,
          gin ? gin->ptr<scalar_t>() : nullptr, planes, h, wd, w, kind,
          count_include_pad, divisor));
  return LaunchStatus("pooling kernel");
}

PoolWindow AdaptiveWindow(const StridedView& out) {
  PoolWindow w{};
  w.oh = out.sizes[2];
  w.ow = out.sizes[3];
  return w;
}

}  // namespace

absl::Status MaxPool2d(const StridedView& in, const PoolWindow& w,
                       const StridedView& out, StreamHandle stream) {
  return LaunchPool(&in, &out, nullptr, nullptr, w, 0, false, 0, stream);
}
absl::Status AvgPool2d(const StridedView& in, const PoolWindow& w,
                       bool count_include_pad, int64_t divisor_override,
                       const StridedView& out, StreamHandle stream) {
  if (in.dtype != DType::kInt64) {
    return LaunchPool(&in, &out, nullptr, nullptr, w, 1, count_include_pad,
                      divisor_override, stream);
  }
  const int64_t planes = in.sizes[0] * in.sizes[1];
  const int64_t n = planes * w.oh * w.ow;
  if (n == 0) return absl::OkStatus();
  AvgPoolInt64Kernel<<<BlocksFor(n), kThreads, 0,
                       static_cast<cudaStream_t>(stream)>>>(
      in.ptr<const int64_t>(), out.ptr<int64_t>(), planes, in.sizes[2],
      in.sizes[3], w, count_include_pad, divisor_override);
  return LaunchStatus("pooling kernel");
}
absl::Status AdaptiveAvgPool2d(const StridedView& in, const StridedView& out,
                               StreamHandle stream) {
  return LaunchPool(&in, &out, nullptr, nullptr, AdaptiveWindow(out), 2, false,
                    0, stream);
}
absl::Status MaxPool2dBackward(const StridedView& grad,
                               const StridedView& input, const PoolWindow& w,
                               const StridedView& grad_input,
                               StreamHandle stream) {
  return LaunchPool(&input, nullptr, &grad, &grad_input, w, 0, false, 0,
                    stream);
}
absl::Status AvgPool2dBackward(const StridedView& grad, const PoolWindow& w,
                               bool count_include_pad, int64_t divisor_override,
                               const StridedView& grad_input,
                               StreamHandle stream) {
  return LaunchPool(nullptr, nullptr, &grad, &grad_input, w, 1,
                    count_include_pad, divisor_override, stream);
}
absl::Status AdaptiveAvgPool2dBackward(const StridedView& grad,
                                       const StridedView& grad_input,
                                       StreamHandle stream) {
  return LaunchPool(nullptr, nullptr, &grad, &grad_input, AdaptiveWindow(grad),
                    2, false, 0, stream);
}

}  // namespace cuda
}  // namespace tensord

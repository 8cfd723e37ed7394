// max_pool2d and adaptive max pooling with indices and their backward on
// CUDA (max_pool.h).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/max_pool.h"

namespace tensord {
namespace cuda {
namespace {

// `start` stepped forward by `step` until >= 0 (kernels/cpu/max_pool.h's
// FirstTapAtOrAfterZero).
__device__ __forceinline__ int64_t FirstTap(int64_t start, int64_t step) {
  return start >= 0 ? start : start + (-start + step - 1) / step * step;
}

// One thread per output element (plane, i, j): PyTorch's loop over the
// window's taps inside the plane, rows then columns.
template <typename T>
__global__ void MaxPoolIndicesKernel(const T* __restrict__ x, T* __restrict__ y,
                                     int64_t* __restrict__ indices,
                                     int64_t planes, int64_t h, int64_t wd,
                                     PoolWindow w) {
  TD_GRID_STRIDE(e, planes * w.oh * w.ow) {
    const int64_t j = e % w.ow, i = (e / w.ow) % w.oh, p = e / (w.oh * w.ow);
    const T* xp = x + p * h * wd;
    const int64_t r_start = i * w.sh - w.ph, c_start = j * w.sw - w.pw;
    const int64_t r_end = min(r_start + (w.kh - 1) * w.dh + 1, h),
                  c_end = min(c_start + (w.kw - 1) * w.dw + 1, wd);
    const int64_t r0 = FirstTap(r_start, w.dh), c0 = FirstTap(c_start, w.dw);
    T best = -INFINITY;
    int64_t at = r0 * wd + c0;
    for (int64_t r = r0; r < r_end; r += w.dh) {
      for (int64_t c = c0; c < c_end; c += w.dw) {
        const T v = xp[r * wd + c];
        if (v > best || v != v) {
          best = v;
          at = r * wd + c;
        }
      }
    }
    y[e] = best;
    indices[e] = at;
  }
}

// One thread per output element (plane, t, i, j): its adaptive window
// (kernels/cpu/max_pool.h's AdaptiveStart/End) in the CPU's scan order.
template <typename T>
__global__ void AdaptiveMaxPoolKernel(const T* __restrict__ x,
                                      T* __restrict__ y,
                                      int64_t* __restrict__ indices,
                                      int64_t planes, int64_t d, int64_t h,
                                      int64_t wd, int64_t od, int64_t oh,
                                      int64_t ow) {
  TD_GRID_STRIDE(e, planes * od * oh * ow) {
    const int64_t j = e % ow, i = (e / ow) % oh, t = (e / (ow * oh)) % od,
                  p = e / (ow * oh * od);
    const T* xp = x + p * d * h * wd;
    const int64_t t0 = t * d / od, t1 = ((t + 1) * d + od - 1) / od;
    const int64_t r0 = i * h / oh, r1 = ((i + 1) * h + oh - 1) / oh;
    const int64_t c0 = j * wd / ow, c1 = ((j + 1) * wd + ow - 1) / ow;
    T best = -INFINITY;
    int64_t at = (t0 * h + r0) * wd + c0;
    for (int64_t u = t0; u < t1; ++u) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t row = (u * h + r) * wd;
        for (int64_t c = c0; c < c1; ++c) {
          const T v = xp[row + c];
          if (v > best || v != v) {
            best = v;
            at = row + c;
          }
        }
      }
    }
    y[e] = best;
    indices[e] = at;
  }
}

template <typename T>
__global__ void MaxPoolIndicesBackwardKernel(const T* __restrict__ grad,
                                             const int64_t* __restrict__ at,
                                             T* __restrict__ gin, int64_t n,
                                             int64_t ohw, int64_t hw) {
  TD_GRID_STRIDE(e, n) {
    const int64_t k = at[e];
    if (k >= 0 && k < hw) atomicAdd(gin + (e / ohw) * hw + k, grad[e]);
  }
}

}  // namespace

absl::Status MaxPool2dWithIndices(const StridedView& in, const PoolWindow& w,
                                  const StridedView& out,
                                  const StridedView& indices,
                                  StreamHandle stream) {
  const int64_t planes = in.sizes[0] * in.sizes[1];
  const int64_t n = planes * w.oh * w.ow;
  if (n == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      in.dtype,
      return absl::UnimplementedError(
          absl::StrCat("max_pool2d_with_indices on cuda: unsupported dtype ",
                       DTypeName(in.dtype))),
      MaxPoolIndicesKernel<scalar_t><<<BlocksFor(n), kThreads, 0, s>>>(
          in.ptr<const scalar_t>(), out.ptr<scalar_t>(), indices.ptr<int64_t>(),
          planes, in.sizes[2], in.sizes[3], w));
  return LaunchStatus("max_pool2d_with_indices kernel");
}

absl::Status AdaptiveMaxPool3d(const StridedView& in, const StridedView& out,
                               const StridedView& indices,
                               StreamHandle stream) {
  const int64_t n = out.numel();
  if (n == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      in.dtype,
      return absl::UnimplementedError(
          absl::StrCat("adaptive_max_pool on cuda: unsupported dtype ",
                       DTypeName(in.dtype))),
      AdaptiveMaxPoolKernel<scalar_t><<<BlocksFor(n), kThreads, 0, s>>>(
          in.ptr<const scalar_t>(), out.ptr<scalar_t>(), indices.ptr<int64_t>(),
          in.sizes[0], in.sizes[1], in.sizes[2], in.sizes[3], out.sizes[1],
          out.sizes[2], out.sizes[3]));
  return LaunchStatus("adaptive_max_pool kernel");
}

absl::Status MaxPool2dWithIndicesBackward(const StridedView& grad,
                                          const StridedView& indices,
                                          const StridedView& grad_input,
                                          StreamHandle stream) {
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
      grad_input.data, 0, grad_input.numel() * ItemSize(grad_input.dtype), s));
  const int64_t n = grad.numel();
  if (n == 0) return absl::OkStatus();
  const int64_t ohw = grad.sizes[2] * grad.sizes[3],
                hw = grad_input.sizes[2] * grad_input.sizes[3];
  TD_CUDA_DISPATCH_FLOAT(
      grad.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "max_pool2d_with_indices_backward on cuda: unsupported dtype ",
          DTypeName(grad.dtype))),
      MaxPoolIndicesBackwardKernel<scalar_t><<<BlocksFor(n), kThreads, 0, s>>>(
          grad.ptr<const scalar_t>(), indices.ptr<const int64_t>(),
          grad_input.ptr<scalar_t>(), n, ohw, hw));
  return LaunchStatus("max_pool2d_with_indices_backward kernel");
}

}  // namespace cuda
}  // namespace tensord

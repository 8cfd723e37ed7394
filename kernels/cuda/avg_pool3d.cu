// 3-d average pooling and its backward on CUDA (avg_pool3d.h).
#include <cuda_runtime.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/avg_pool3d.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loops.cuh"

namespace tensord {
namespace cuda {
namespace {

struct Sizes {
  int64_t planes, in[3], out[3];
};

// Output e's box [lo, hi) per dim and its divisor (0: nothing inside):
// kernels/cpu/avg_pool3d.h's AvgRange and divisor rule.
struct Box {
  int64_t lo[3], hi[3], divisor;
};

__device__ Box BoxAt(int64_t e, const Sizes& s, const AvgWindow3d& w) {
  int64_t o[3];
  o[2] = e % s.out[2];
  o[1] = (e / s.out[2]) % s.out[1];
  o[0] = (e / (s.out[2] * s.out[1])) % s.out[0];
  Box b;
  int64_t padded = 1, inside = 1;
  for (int d = 0; d < 3; ++d) {
    int64_t lo, hi;
    if (w.adaptive) {
      lo = o[d] * s.in[d] / s.out[d];
      hi = ((o[d] + 1) * s.in[d] + s.out[d] - 1) / s.out[d];
    } else {
      lo = o[d] * w.stride[d] - w.pad[d];
      hi = min(lo + w.kernel[d], s.in[d] + w.pad[d]);
    }
    padded *= hi - lo;
    lo = max(lo, int64_t{0});
    hi = min(hi, s.in[d]);
    inside *= hi > lo ? hi - lo : 0;
    b.lo[d] = lo;
    b.hi[d] = hi;
  }
  b.divisor = inside == 0               ? 0
              : w.divisor_override != 0 ? w.divisor_override
              : w.count_include_pad     ? padded
                                        : inside;
  return b;
}

__device__ __forceinline__ double Divide(double sum, int64_t divisor) {
  return sum / static_cast<double>(divisor);
}
__device__ __forceinline__ int64_t Divide(uint64_t sum, int64_t divisor) {
  return static_cast<int64_t>(sum) / divisor;
}

// Acc: double for floats; uint64_t (wrapping) for int64, divided as int64.
template <typename T, typename Acc>
__global__ void AvgPool3dKernel(const T* __restrict__ x, T* __restrict__ y,
                                Sizes s, AvgWindow3d w) {
  const int64_t ovol = s.out[0] * s.out[1] * s.out[2];
  const int64_t vol = s.in[0] * s.in[1] * s.in[2];
  TD_GRID_STRIDE(e, s.planes * ovol) {
    const Box b = BoxAt(e, s, w);
    const T* xp = x + (e / ovol) * vol;
    Acc sum = 0;
    for (int64_t u = b.lo[0]; u < b.hi[0]; ++u) {
      for (int64_t r = b.lo[1]; r < b.hi[1]; ++r) {
        const T* row = xp + (u * s.in[1] + r) * s.in[2];
        for (int64_t c = b.lo[2]; c < b.hi[2]; ++c) {
          sum += static_cast<Acc>(row[c]);
        }
      }
    }
    y[e] = b.divisor == 0 ? T(0) : static_cast<T>(Divide(sum, b.divisor));
  }
}

template <typename T>
__global__ void AvgPool3dBackwardKernel(const T* __restrict__ grad,
                                        T* __restrict__ gin, Sizes s,
                                        AvgWindow3d w) {
  const int64_t ovol = s.out[0] * s.out[1] * s.out[2];
  const int64_t vol = s.in[0] * s.in[1] * s.in[2];
  TD_GRID_STRIDE(e, s.planes * ovol) {
    const Box b = BoxAt(e, s, w);
    if (b.divisor == 0) continue;
    const T share = grad[e] / static_cast<T>(b.divisor);
    T* gp = gin + (e / ovol) * vol;
    for (int64_t u = b.lo[0]; u < b.hi[0]; ++u) {
      for (int64_t r = b.lo[1]; r < b.hi[1]; ++r) {
        T* row = gp + (u * s.in[1] + r) * s.in[2];
        for (int64_t c = b.lo[2]; c < b.hi[2]; ++c) atomicAdd(row + c, share);
      }
    }
  }
}

Sizes SizesOf(const StridedView& image, const StridedView& pooled) {
  return {image.sizes[0],
          {image.sizes[1], image.sizes[2], image.sizes[3]},
          {pooled.sizes[1], pooled.sizes[2], pooled.sizes[3]}};
}

}  // namespace

absl::Status AvgPool3d(const StridedView& in, const AvgWindow3d& w,
                       const StridedView& out, StreamHandle stream) {
  const int64_t n = out.numel();
  if (n == 0) return absl::OkStatus();
  auto st = static_cast<cudaStream_t>(stream);
  const Sizes s = SizesOf(in, out);
  if (in.dtype == DType::kInt64 && !w.adaptive) {
    AvgPool3dKernel<int64_t, uint64_t><<<BlocksFor(n), kThreads, 0, st>>>(
        in.ptr<const int64_t>(), out.ptr<int64_t>(), s, w);
    return LaunchStatus("avg_pool3d kernel");
  }
  TD_CUDA_DISPATCH_FLOAT(
      in.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "avg_pool3d on cuda: unsupported dtype ", DTypeName(in.dtype))),
      AvgPool3dKernel<scalar_t, double><<<BlocksFor(n), kThreads, 0, st>>>(
          in.ptr<const scalar_t>(), out.ptr<scalar_t>(), s, w));
  return LaunchStatus("avg_pool3d kernel");
}

absl::Status AvgPool3dBackward(const StridedView& grad, const AvgWindow3d& w,
                               const StridedView& grad_input,
                               StreamHandle stream) {
  auto st = static_cast<cudaStream_t>(stream);
  TD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
      grad_input.data, 0, grad_input.numel() * ItemSize(grad_input.dtype), st));
  const int64_t n = grad.numel();
  if (n == 0) return absl::OkStatus();
  const Sizes s = SizesOf(grad_input, grad);
  TD_CUDA_DISPATCH_FLOAT(
      grad.dtype,
      return absl::UnimplementedError(
          absl::StrCat("avg_pool3d_backward on cuda: unsupported dtype ",
                       DTypeName(grad.dtype))),
      AvgPool3dBackwardKernel<scalar_t><<<BlocksFor(n), kThreads, 0, st>>>(
          grad.ptr<const scalar_t>(), grad_input.ptr<scalar_t>(), s, w));
  return LaunchStatus("avg_pool3d_backward kernel");
}

}  // namespace cuda
}  // namespace tensord

// Copy and creation CUDA kernels (elementwise.h): the converting strided
// copy between any two dtypes (one cudaMemcpyAsync when both sides are
// contiguous and of one dtype), fill and arange. Offsets are 64-bit (Note
// [CUDA indexing]).
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/loops.cuh"

namespace tensord {
namespace cuda {

absl::Status Copy(const StridedView& in, const StridedView& out,
                  StreamHandle stream) {
  if (out.numel() == 0) return absl::OkStatus();
  if (in.dtype == out.dtype && in.is_contiguous() && out.is_contiguous()) {
    TD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        out.data, in.data, out.numel() * ItemSize(out.dtype),
        cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
    return absl::OkStatus();
  }
  const void* src = in.data;
  void* dst = out.data;
  const DType sd = in.dtype, dd = out.dtype;
  const StridedView* views[2] = {&out, &in};
  return LaunchMap<2>(
      views,
      [=] __device__(const int64_t(&off)[2]) {
        Store(dst, dd, off[0], Load(src, sd, off[1]));
      },
      stream, "copy kernel");
}

absl::Status Fill(const StridedView& out, double value, StreamHandle stream) {
  void* dst = out.data;
  const DType d = out.dtype;
  Value v{value, static_cast<int64_t>(value), false};
  if (d == DType::kInt64 || d == DType::kInt32 || d == DType::kInt8 ||
      d == DType::kUInt8) {
    v = Value{0, static_cast<int64_t>(value), true};
  }
  const StridedView* views[1] = {&out};
  return LaunchMap<1>(
      views,
      [=] __device__(const int64_t(&off)[1]) { Store(dst, d, off[0], v); },
      stream, "fill kernel");
}

absl::Status Arange(const StridedView& out, double start, double step,
                    StreamHandle stream) {
  void* dst = out.data;
  const DType d = out.dtype;
  const int64_t stride = out.ndim > 0 ? out.strides[0] : 1;
  const int64_t n = out.numel();
  if (n == 0) return absl::OkStatus();
  const bool is_int = !(d == DType::kFloat32 || d == DType::kFloat64 ||
                        d == DType::kFloat16 || d == DType::kBFloat16);
  MapContiguous<1><<<BlocksFor(n), kThreads, 0,
                     static_cast<cudaStream_t>(
                         stream)>>>(n, [=] __device__(const int64_t(&off)[1]) {
    const double x = start + static_cast<double>(off[0]) * step;
    Store(dst, d, off[0] * stride, Value{x, static_cast<int64_t>(x), is_int});
  });
  return LaunchStatus("arange kernel");
}

}  // namespace cuda
}  // namespace tensord

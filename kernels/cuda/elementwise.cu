// Elementwise CUDA maps (elementwise.h): unary, binary (with torch.special's
// functions through their own functors) and polygamma. Three
// launch paths per map: contiguous operands of one dtype take 16-byte vector
// loads (a Pack per thread, grid-stride); other contiguous ones index
// directly; everything else goes through OffsetCalc with 64-bit offsets
// (Note [CUDA indexing]). The per-element math is in elementwise_fns.cuh;
// copies and creation in copy.cu. float16/bfloat16 operands are read and
// written as such and computed in float (Note [Native half kernels]).
#include <cuda_runtime.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/elementwise_fns.cuh"
#include "kernels/cuda/loops.cuh"

namespace tensord {
namespace cuda {
namespace {

template <typename T>
struct alignas(16) Pack {
  static constexpr int kLanes = 16 / sizeof(T);
  T v[kLanes];
};

bool Aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

// out[i] = f(a[i], b[i]...) over contiguous, same-dtype operands.
template <typename T, typename F>
__global__ void Map1Vec(const T* __restrict__ a, T* __restrict__ out, int64_t n,
                        F f) {
  using P = Pack<T>;
  const int64_t packs = n / P::kLanes;
  TD_GRID_STRIDE(i, packs) {
    P x = reinterpret_cast<const P*>(a)[i], y;
#pragma unroll
    for (int k = 0; k < P::kLanes; ++k) y.v[k] = f(x.v[k]);
    reinterpret_cast<P*>(out)[i] = y;
  }
  TD_GRID_STRIDE(j, n - packs * P::kLanes) {
    const int64_t i = packs * P::kLanes + j;
    out[i] = f(a[i]);
  }
}

template <typename T, typename F>
__global__ void Map2Vec(const T* __restrict__ a, const T* __restrict__ b,
                        T* __restrict__ out, int64_t n, F f) {
  using P = Pack<T>;
  const int64_t packs = n / P::kLanes;
  TD_GRID_STRIDE(i, packs) {
    P x = reinterpret_cast<const P*>(a)[i];
    P y = reinterpret_cast<const P*>(b)[i], z;
#pragma unroll
    for (int k = 0; k < P::kLanes; ++k) z.v[k] = f(x.v[k], y.v[k]);
    reinterpret_cast<P*>(out)[i] = z;
  }
  TD_GRID_STRIDE(j, n - packs * P::kLanes) {
    const int64_t i = packs * P::kLanes + j;
    out[i] = f(a[i], b[i]);
  }
}

// Note [Native half kernels]: float16/bfloat16 maps read and write the
// half type themselves (8 lanes per 16-byte vector) and compute each
// element with the float32 functor, rounding once to nearest on the store:
// the values of the dispatcher's float32 path (Note [Half compute]) with
// half the memory traffic of the operands and no float32 temporaries.
template <typename H, typename F>
struct InFloat {
  F f;
  __device__ __forceinline__ H operator()(H x) const {
    return FloatToHalf<H>(f(HalfToFloat(x)));
  }
  __device__ __forceinline__ H operator()(H x, H y) const {
    return FloatToHalf<H>(f(HalfToFloat(x), HalfToFloat(y)));
  }
};

// out = f(in) with operands of type T.
template <typename T, typename F>
absl::Status UnaryMap(const StridedView& in, const StridedView& out, F f,
                      StreamHandle stream) {
  const int64_t n = out.numel();
  if (in.is_contiguous() && out.is_contiguous() && Aligned16(in.data) &&
      Aligned16(out.data)) {
    Map1Vec<<<BlocksFor(n, Pack<T>::kLanes), kThreads, 0,
              static_cast<cudaStream_t>(stream)>>>(in.ptr<const T>(),
                                                   out.ptr<T>(), n, f);
    return LaunchStatus("unary kernel");
  }
  const T* x = in.ptr<const T>();
  T* y = out.ptr<T>();
  const StridedView* views[2] = {&out, &in};
  return LaunchMap<2>(
      views,
      [=] __device__(const int64_t(&off)[2]) { y[off[0]] = f(x[off[1]]); },
      stream, "unary kernel");
}

// out = f(a, b) with operands of type T.
template <typename T, typename F>
absl::Status BinaryMap(const StridedView& a, const StridedView& b,
                       const StridedView& out, F f, StreamHandle stream) {
  const int64_t n = out.numel();
  if (a.is_contiguous() && b.is_contiguous() && out.is_contiguous() &&
      Aligned16(a.data) && Aligned16(b.data) && Aligned16(out.data)) {
    Map2Vec<<<BlocksFor(n, Pack<T>::kLanes), kThreads, 0,
              static_cast<cudaStream_t>(stream)>>>(
        a.ptr<const T>(), b.ptr<const T>(), out.ptr<T>(), n, f);
    return LaunchStatus("binary kernel");
  }
  const T* x = a.ptr<const T>();
  const T* y = b.ptr<const T>();
  T* z = out.ptr<T>();
  const StridedView* views[3] = {&out, &a, &b};
  return LaunchMap<3>(
      views,
      [=] __device__(const int64_t(&off)[3]) {
        z[off[0]] = f(x[off[1]], y[off[2]]);
      },
      stream, "binary kernel");
}

}  // namespace

absl::Status Unary(UnaryOp op, const StridedView& in, const StridedView& out,
                   StreamHandle stream) {
  if (out.numel() == 0) return absl::OkStatus();
  if (special::IsSpecialUnary(op)) {  // float32/float64 (the rows cast)
    TD_CUDA_DISPATCH_FLOAT(out.dtype,
                           return absl::UnimplementedError(absl::StrCat(
                               "special function on cuda: unsupported dtype ",
                               DTypeName(out.dtype))),
                           return UnaryMap<scalar_t>(
                               in, out, SpecialUnaryFn<scalar_t>{op}, stream));
  }
  const UnaryFn<float> in_float{op};
  switch (out.dtype) {
    case DType::kFloat16:
      return UnaryMap<__half>(
          in, out, InFloat<__half, UnaryFn<float>>{in_float}, stream);
    case DType::kBFloat16:
      return UnaryMap<__nv_bfloat16>(
          in, out, InFloat<__nv_bfloat16, UnaryFn<float>>{in_float}, stream);
    default:
      break;
  }
  TD_CUDA_DISPATCH(
      out.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "unary op on cuda: unsupported dtype ", DTypeName(out.dtype))),
      return UnaryMap<scalar_t>(in, out, UnaryFn<scalar_t>{op}, stream));
  return absl::OkStatus();
}

absl::Status Binary(BinaryOp op, const StridedView& a, const StridedView& b,
                    double alpha, const StridedView& out, StreamHandle stream) {
  if (out.numel() == 0) return absl::OkStatus();
  if (special::IsSpecialBinary(op)) {  // float32/float64 (the rows cast)
    TD_CUDA_DISPATCH_FLOAT(
        out.dtype,
        return absl::UnimplementedError(
            absl::StrCat("special function on cuda: unsupported dtype ",
                         DTypeName(out.dtype))),
        return BinaryMap<scalar_t>(a, b, out, SpecialBinaryFn<scalar_t>{op},
                                   stream));
  }
  const BinaryFn<float> in_float{op, static_cast<float>(alpha)};
  switch (out.dtype) {
    case DType::kFloat16:
      return BinaryMap<__half>(
          a, b, out, InFloat<__half, BinaryFn<float>>{in_float}, stream);
    case DType::kBFloat16:
      return BinaryMap<__nv_bfloat16>(
          a, b, out, InFloat<__nv_bfloat16, BinaryFn<float>>{in_float}, stream);
    default:
      break;
  }
  TD_CUDA_DISPATCH(
      out.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "binary op on cuda: unsupported dtype ", DTypeName(out.dtype))),
      return BinaryMap<scalar_t>(
          a, b, out, BinaryFn<scalar_t>{op, static_cast<scalar_t>(alpha)},
          stream));
  return absl::OkStatus();
}

absl::Status Polygamma(int n, const StridedView& in, const StridedView& out,
                       StreamHandle stream) {
  if (out.numel() == 0) return absl::OkStatus();
  TD_CUDA_DISPATCH_FLOAT(
      out.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "polygamma on cuda: unsupported dtype ", DTypeName(out.dtype))),
      return UnaryMap<scalar_t>(in, out, PolygammaFn<scalar_t>{n}, stream));
  return absl::OkStatus();
}

absl::Status GeluBackward(const StridedView& dy, const StridedView& x,
                          bool tanh, const StridedView& dx,
                          StreamHandle stream) {
  if (dx.numel() == 0) return absl::OkStatus();
  TD_CUDA_DISPATCH_FLOAT(
      dx.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "gelu_backward on cuda: unsupported dtype ", DTypeName(dx.dtype))),
      return BinaryMap<scalar_t>(dy, x, dx, GeluBackwardFn<scalar_t>{tanh},
                                 stream));
  return absl::OkStatus();
}

absl::Status AddFloat32(const StridedView& a, const StridedView& b, float alpha,
                        const StridedView& out, StreamHandle stream) {
  return Binary(BinaryOp::kAdd, a, b, alpha, out, stream);
}

}  // namespace cuda
}  // namespace tensord

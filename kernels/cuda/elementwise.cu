// Elementwise CUDA kernels (elementwise.h). Three launch paths per map:
// contiguous operands of one dtype take 16-byte vector loads (a Pack per
// thread, grid-stride); other contiguous ones index directly; everything else
// goes through OffsetCalc with 64-bit offsets (Note [CUDA indexing]).
// Scalar math follows kernels/cpu so CPU and CUDA agree: integer division by
// zero gives 0, floor/remainder follow Python, max/min propagate NaN.
// float16/bfloat16 operands are read and written as such and computed in
// float (Note [Native half kernels]).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/loops.cuh"
#include "runtime/core/special_math.h"

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

// ---- copy / cast -------------------------------------------------------

}  // namespace

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

namespace {

// ---- unary ---------------------------------------------------------------

template <typename T>
__device__ __forceinline__ bool IsNeg(T x) {
  if constexpr (std::is_signed_v<T>) {
    return x < T{0};
  } else {
    return false;
  }
}

template <typename T>
struct UnaryFn {
  UnaryOp op;
  __device__ __forceinline__ T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) {
      return op == UnaryOp::kBitwiseNot ? !x : x;
    } else if constexpr (std::is_integral_v<T>) {
      switch (op) {
        case UnaryOp::kNeg:
          return T(-x);
        case UnaryOp::kRelu:
          return x > T{0} ? x : T{0};
        case UnaryOp::kAbs:
          return IsNeg(x) ? T(-x) : x;
        case UnaryOp::kSign:
          return T((T{0} < x) - IsNeg(x));
        case UnaryOp::kSquare:
          return T(x * x);
        case UnaryOp::kBitwiseNot:
          return T(~x);
        default:  // floor/ceil/round/trunc: identity; math ops get floats
          return x;
      }
    } else {
      switch (op) {
        case UnaryOp::kNeg:
          return -x;
        case UnaryOp::kRelu:
          return x > T{0} ? x : T{0};
        case UnaryOp::kAbs:
          return fabs(x);
        case UnaryOp::kSign:
          return T((T{0} < x) - (x < T{0}));
        case UnaryOp::kSquare:
          return x * x;
        case UnaryOp::kExp:
          return exp(x);
        case UnaryOp::kLog:
          return log(x);
        case UnaryOp::kLog1p:
          return log1p(x);
        case UnaryOp::kExpm1:
          return expm1(x);
        case UnaryOp::kSqrt:
          return sqrt(x);
        case UnaryOp::kRsqrt:
          return T(1) / sqrt(x);
        case UnaryOp::kSin:
          return sin(x);
        case UnaryOp::kCos:
          return cos(x);
        case UnaryOp::kTanh:
          return tanh(x);
        case UnaryOp::kErf:
          return erf(x);
        case UnaryOp::kSigmoid:
          return T(1) / (T(1) + exp(-x));
        case UnaryOp::kSilu:
          return x / (T(1) + exp(-x));
        case UnaryOp::kGelu:
          return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
        case UnaryOp::kGeluTanh:  // x sigmoid(2u): 0.5 x (1 + tanh(u))
          return x / (T(1) + exp(T(-1.5957691216057308) *
                                 (x + T(0.044715) * x * x * x)));
        case UnaryOp::kReciprocal:
          return T(1) / x;
        case UnaryOp::kFloor:
          return floor(x);
        case UnaryOp::kCeil:
          return ceil(x);
        case UnaryOp::kTrunc:
          return trunc(x);
        case UnaryOp::kRound:
          return rint(x);  // half to even
        case UnaryOp::kTan:
          return tan(x);
        case UnaryOp::kAtan:
          return atan(x);
        case UnaryOp::kAsin:
          return asin(x);
        case UnaryOp::kAcos:
          return acos(x);
        case UnaryOp::kSinh:
          return sinh(x);
        case UnaryOp::kCosh:
          return cosh(x);
        case UnaryOp::kAsinh:
          return asinh(x);
        case UnaryOp::kAcosh:
          return acosh(x);
        case UnaryOp::kAtanh:
          return atanh(x);
        case UnaryOp::kLog2:
          return log2(x);
        case UnaryOp::kLog10:
          return log10(x);
        case UnaryOp::kExp2:
          return exp2(x);
        case UnaryOp::kErfc:
          return erfc(x);
        // As kernels/cpu: the special functions in double.
        case UnaryOp::kErfinv:
          return T(special::Erfinv(static_cast<double>(x)));
        case UnaryOp::kLgamma:
          return T(lgamma(static_cast<double>(x)));
        case UnaryOp::kDigamma:
          return T(special::Digamma(static_cast<double>(x)));
        default:
          return x;
      }
    }
  }
};

template <typename T>
__device__ __forceinline__ T IntPow(T base, T exp) {
  if (IsNeg(exp)) {
    if (base == 1) return 1;
    if (IsNeg(base) && base == T(-1)) return (exp & 1) ? T(-1) : T(1);
    return 0;
  }
  T result = 1;
  while (exp) {
    if (exp & 1) result = T(result * base);
    exp >>= 1;
    base = T(base * base);
  }
  return result;
}

template <typename T>
struct BinaryFn {
  BinaryOp op;
  T alpha;
  __device__ __forceinline__ T operator()(T x, T y) const {
    if constexpr (std::is_same_v<T, bool>) {
      switch (op) {
        case BinaryOp::kMul:
        case BinaryOp::kMin:
        case BinaryOp::kBitAnd:
          return x && y;
        case BinaryOp::kBitXor:
          return x != y;
        case BinaryOp::kAdd:  // PyTorch: x || (alpha && y)
          return x || (alpha != 0 && y);
        default:
          return x || y;  // max, or
      }
    } else if constexpr (std::is_integral_v<T>) {
      switch (op) {
        case BinaryOp::kAdd:
          return T(x + alpha * y);
        case BinaryOp::kSub:
          return T(x - alpha * y);
        case BinaryOp::kMul:
          return T(x * y);
        case BinaryOp::kDiv:
        case BinaryOp::kTruncDiv:
          return y == 0 ? T{0} : T(x / y);
        case BinaryOp::kFloorDiv: {
          if (y == 0) return T{0};
          const T q = T(x / y);
          return (x % y != 0 && (IsNeg(x) != IsNeg(y))) ? T(q - 1) : q;
        }
        case BinaryOp::kRemainder: {
          if (y == 0) return T{0};
          const T r = T(x % y);
          return (r != 0 && (IsNeg(r) != IsNeg(y))) ? T(r + y) : r;
        }
        case BinaryOp::kPow:
          return IntPow<T>(x, y);
        case BinaryOp::kAtan2:  // the row promotes integers to floating
          return T(atan2(static_cast<double>(x), static_cast<double>(y)));
        case BinaryOp::kFmax:
          return x > y ? x : y;
        case BinaryOp::kFmin:
          return x < y ? x : y;
        case BinaryOp::kFmod:
          return y == 0 ? T{0} : T(x % y);
        case BinaryOp::kMax:
          return x > y ? x : y;
        case BinaryOp::kMin:
          return x < y ? x : y;
        case BinaryOp::kBitAnd:
          return T(x & y);
        case BinaryOp::kBitOr:
          return T(x | y);
        case BinaryOp::kBitXor:
          return T(x ^ y);
        case BinaryOp::kThresholdBackward:
          return y > alpha ? x : T(0);
      }
      return x;
    } else {
      switch (op) {
        case BinaryOp::kAdd:
          return x + alpha * y;
        case BinaryOp::kSub:
          return x - alpha * y;
        case BinaryOp::kMul:
          return x * y;
        case BinaryOp::kDiv:
          return x / y;
        case BinaryOp::kTruncDiv:
          return trunc(x / y);
        case BinaryOp::kFloorDiv: {
          if (y == 0) return x / y;
          const T r = fmod(x, y);
          T q = (x - r) / y;
          if (r != 0 && ((r < 0) != (y < 0))) q -= 1;
          return q;
        }
        case BinaryOp::kRemainder: {
          const T r = fmod(x, y);
          return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
        }
        case BinaryOp::kPow:
          return pow(x, y);
        case BinaryOp::kAtan2:
          return atan2(x, y);
        case BinaryOp::kFmax:  // NaN only where both are
          return (y != y || x > y) ? x : y;
        case BinaryOp::kFmin:
          return (y != y || x < y) ? x : y;
        case BinaryOp::kFmod:
          return fmod(x, y);
        case BinaryOp::kHypot:
          return hypot(x, y);
        case BinaryOp::kCopysign:
          return copysign(x, y);
        case BinaryOp::kNextafter:
          return nextafter(x, y);
        case BinaryOp::kZeta:
          return T(
              special::Zeta(static_cast<double>(x), static_cast<double>(y)));
        case BinaryOp::kMax:
          return (x != x || x > y) ? x : y;
        case BinaryOp::kMin:
          return (x != x || x < y) ? x : y;
        case BinaryOp::kThresholdBackward:
          return y > alpha ? x : T(0);
        default:
          return x;  // bitwise ops are rejected for floats
      }
    }
  }
};

template <typename T>
struct PolygammaFn {
  int n;
  __device__ __forceinline__ T operator()(T x) const {
    return T(special::Polygamma(n, static_cast<double>(x)));
  }
};

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

absl::Status AddFloat32(const StridedView& a, const StridedView& b, float alpha,
                        const StridedView& out, StreamHandle stream) {
  return Binary(BinaryOp::kAdd, a, b, alpha, out, stream);
}

}  // namespace cuda
}  // namespace tensord

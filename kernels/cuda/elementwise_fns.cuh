// The per-element math of the elementwise CUDA kernels (elementwise.cu):
// one functor per op family, dispatched on the op enum inside the kernel.
// Scalar math follows kernels/cpu so CPU and CUDA agree: integer division by
// zero gives 0, floor/remainder follow Python, max/min propagate NaN.
// Included by elementwise.cu only (nvcc).
#ifndef TENSORD_KERNELS_CUDA_ELEMENTWISE_FNS_CUH_
#define TENSORD_KERNELS_CUDA_ELEMENTWISE_FNS_CUH_

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/loops.cuh"
#include "runtime/core/special_math.h"
#include "runtime/core/special_ops.h"

namespace tensord {
namespace cuda {

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
        case BinaryOp::kFmin:
        case BinaryOp::kBitAnd:
          return x && y;
        case BinaryOp::kBitXor:
          return x != y;
        case BinaryOp::kAdd:  // PyTorch: x || (alpha && y)
          return x || (alpha != 0 && y);
        default:
          return x || y;  // max, fmax, or
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

// torch.special's Bessel/normal functions, polynomials and igamma/igammac:
// their own functors, so the common UnaryFn/BinaryFn kernels do not carry
// their code (Note [Special function ops]). Unary ones and igamma compute in
// double, polynomials in T, as kernels/cpu.
template <typename T>
struct SpecialUnaryFn {
  UnaryOp op;
  __device__ __forceinline__ T operator()(T x) const {
    return T(special::SpecialUnary(op, static_cast<double>(x)));
  }
};

template <typename T>
struct SpecialBinaryFn {
  BinaryOp op;
  __device__ __forceinline__ T operator()(T x, T n) const {
    return special::SpecialBinary<T>(op, x, n);
  }
};

// dy * gelu'(x), kernels/cpu/gelu.cc's formulas in the same order: tanh:
// s + x s (1 - s) 2 beta (1 + 3 kappa x^2) with s = sigmoid(2u) = 0.5 (1 +
// tanh(u)), u = beta (x + kappa x^3); exact: Phi(x) + x phi(x).
template <typename T>
struct GeluBackwardFn {
  bool tanh;
  __device__ __forceinline__ T operator()(T dy, T v) const {
    constexpr double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5;  // sqrt(2 / pi)
    constexpr double kKappa = 0.044715;
    constexpr double kInvSqrt2Pi = M_2_SQRTPI * M_SQRT1_2 * 0.5;
    if (tanh) {
      const T v2 = v * v;
      const T u = T(kBeta) * (v + T(kKappa) * v2 * v);
      const T s = T(1) / (T(1) + exp(T(-2) * u));
      const T du = T(2 * kBeta) * (T(1) + T(3 * kKappa) * v2);
      return dy * (s + v * s * (T(1) - s) * du);
    }
    const T cdf = T(0.5) * (T(1) + erf(v * T(M_SQRT1_2)));
    const T pdf = T(kInvSqrt2Pi) * exp(T(-0.5) * v * v);
    return dy * (cdf + v * pdf);
  }
};

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_ELEMENTWISE_FNS_CUH_

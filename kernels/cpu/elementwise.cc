#include "kernels/cpu/elementwise.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/loops.h"
#include "runtime/core/special_math.h"
#include "runtime/core/special_ops.h"

namespace tensord {
namespace cpu {
namespace {

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <typename To, typename From>
To Convert(From v) {
  if constexpr (kIsHalf<From>) {
    return Convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From{};
  } else if constexpr (kIsHalf<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> &&
                       std::is_floating_point_v<From>) {
    // Out-of-range and NaN float-to-int casts are UB in C++; PyTorch leaves
    // them unspecified. Saturate via int64 so the daemon stays defined.
    if (!(v == v)) return To{0};
    if (v >= 9.2e18) return static_cast<To>(INT64_MAX);
    if (v <= -9.2e18) return static_cast<To>(INT64_MIN);
    return static_cast<To>(static_cast<int64_t>(v));
  } else {
    return static_cast<To>(v);
  }
}

template <typename T>
T IntPow(T base, T exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == static_cast<T>(-1)) return (exp % 2 == 0) ? 1 : base;
    return 0;
  }
  T result = 1;
  while (exp) {
    if (exp & 1) result = static_cast<T>(result * base);
    base = static_cast<T>(base * base);
    exp >>= 1;
  }
  return result;
}

template <typename T>
absl::Status BinaryTyped(BinaryOp op, const StridedView& a,
                         const StridedView& b, double alpha,
                         const StridedView& out) {
  const T al = static_cast<T>(alpha);
  switch (op) {
    case BinaryOp::kAdd:
      if (alpha == 1)
        Map2<T, T>(a, b, out, [](T x, T y) { return T(x + y); });
      else
        Map2<T, T>(a, b, out, [al](T x, T y) { return T(x + al * y); });
      break;
    case BinaryOp::kSub:
      if (alpha == 1)
        Map2<T, T>(a, b, out, [](T x, T y) { return T(x - y); });
      else
        Map2<T, T>(a, b, out, [al](T x, T y) { return T(x - al * y); });
      break;
    case BinaryOp::kMul:
      Map2<T, T>(a, b, out, [](T x, T y) { return T(x * y); });
      break;
    case BinaryOp::kDiv:
      Map2<T, T>(a, b, out, [](T x, T y) {
        if constexpr (std::is_integral_v<T>)
          return y == 0 ? T{0} : T(x / y);
        else
          return T(x / y);
      });
      break;
    case BinaryOp::kTruncDiv:
      Map2<T, T>(a, b, out, [](T x, T y) {
        if constexpr (std::is_integral_v<T>)
          return y == 0 ? T{0} : T(x / y);
        else
          return T(std::trunc(x / y));
      });
      break;
    case BinaryOp::kFloorDiv:
      Map2<T, T>(a, b, out, [](T x, T y) {
        if constexpr (std::is_integral_v<T>) {
          if (y == 0) return T{0};
          T q = T(x / y);
          if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
          return q;
        } else {
          return T(std::floor(x / y));
        }
      });
      break;
    case BinaryOp::kRemainder:
      Map2<T, T>(a, b, out, [](T x, T y) {
        if constexpr (std::is_integral_v<T>) {
          if (y == 0) return T{0};
          T r = T(x % y);
          if (r != 0 && ((r < 0) != (y < 0))) r = T(r + y);
          return r;
        } else {
          T r = std::fmod(x, y);
          if (r != 0 && ((r < 0) != (y < 0))) r += y;
          return r;
        }
      });
      break;
    case BinaryOp::kAtan2:
      Map2<T, T>(a, b, out, [](T x, T y) {
        return T(std::atan2(static_cast<double>(x), static_cast<double>(y)));
      });
      break;
    case BinaryOp::kFmax:  // NaN only where both are
      Map2<T, T>(a, b, out, [](T x, T y) { return (y != y || x > y) ? x : y; });
      break;
    case BinaryOp::kFmin:
      Map2<T, T>(a, b, out, [](T x, T y) { return (y != y || x < y) ? x : y; });
      break;
    case BinaryOp::kFmod:  // C's remainder: the sign of x
      Map2<T, T>(a, b, out, [](T x, T y) {
        if constexpr (std::is_integral_v<T>)
          return y == 0 ? T{0} : T(x % y);
        else
          return T(std::fmod(x, y));
      });
      break;
    case BinaryOp::kHypot:
      Map2<T, T>(a, b, out, [](T x, T y) { return T(std::hypot(x, y)); });
      break;
    case BinaryOp::kCopysign:
      Map2<T, T>(a, b, out, [](T x, T y) {
        return T(std::copysign(double(x), double(y)));
      });
      break;
    case BinaryOp::kNextafter:  // in T's own precision
      Map2<T, T>(a, b, out, [](T x, T y) {
        if constexpr (std::is_floating_point_v<T>)
          return std::nextafter(x, y);
        else
          return x;  // the row takes floating dtypes only
      });
      break;
    case BinaryOp::kZeta:
      Map2<T, T>(a, b, out, [](T x, T q) {
        return T(special::Zeta(double(x), double(q)));
      });
      break;
    // torch.special's polynomials p_n(x), x = a, n = b, computed in T as
    // PyTorch does, and igamma/igammac (Note [Special function ops]); the
    // rows take floating dtypes only.
    case BinaryOp::kChebyshevT:
    case BinaryOp::kChebyshevU:
    case BinaryOp::kChebyshevV:
    case BinaryOp::kChebyshevW:
    case BinaryOp::kShiftedChebyshevT:
    case BinaryOp::kShiftedChebyshevU:
    case BinaryOp::kShiftedChebyshevV:
    case BinaryOp::kShiftedChebyshevW:
    case BinaryOp::kHermiteH:
    case BinaryOp::kHermiteHe:
    case BinaryOp::kLaguerreL:
    case BinaryOp::kLegendreP:
    case BinaryOp::kIgamma:
    case BinaryOp::kIgammac:
      if constexpr (std::is_floating_point_v<T>) {
        Map2<T, T>(a, b, out, [op](T x, T n) {
          return special::SpecialBinary<T>(op, x, n);
        });
        break;
      }
      return absl::InvalidArgumentError(
          "orthogonal polynomials and igamma are only defined for floating "
          "tensors");
    case BinaryOp::kPow:
      Map2<T, T>(a, b, out, [](T x, T y) {
        if constexpr (std::is_integral_v<T>)
          return IntPow<T>(x, y);
        else
          return T(std::pow(x, y));
      });
      break;
    case BinaryOp::kMax:
      Map2<T, T>(a, b, out, [](T x, T y) { return (x != x || x > y) ? x : y; });
      break;
    case BinaryOp::kMin:
      Map2<T, T>(a, b, out, [](T x, T y) { return (x != x || x < y) ? x : y; });
      break;
    case BinaryOp::kThresholdBackward:
      Map2<T, T>(a, b, out, [al](T g, T x) { return x > al ? g : T(0); });
      break;
    case BinaryOp::kBitAnd:
    case BinaryOp::kBitOr:
    case BinaryOp::kBitXor:
      if constexpr (std::is_integral_v<T>) {
        if (op == BinaryOp::kBitAnd) {
          Map2<T, T>(a, b, out, [](T x, T y) { return T(x & y); });
        } else if (op == BinaryOp::kBitOr) {
          Map2<T, T>(a, b, out, [](T x, T y) { return T(x | y); });
        } else {
          Map2<T, T>(a, b, out, [](T x, T y) { return T(x ^ y); });
        }
        break;
      }
      return absl::InvalidArgumentError(
          "bitwise ops are only defined for integer and bool tensors");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Copy(const StridedView& in, const StridedView& out) {
  absl::Status status;
  auto outer = [&](auto out_tag) {
    using To = decltype(out_tag);
    status = DispatchWithHalf(in.dtype, "copy", [&](auto in_tag) {
      using From = decltype(in_tag);
      RunLoop<2>({&out, &in}, [](const std::array<char*, 2>& p, int64_t n,
                                 const std::array<int64_t, 2>& s) {
        if (std::is_same_v<To, From> && s[0] == sizeof(To) &&
            s[1] == sizeof(From)) {
          std::memcpy(p[0], p[1], n * sizeof(To));
          return;
        }
        for (int64_t i = 0; i < n; ++i) {
          *reinterpret_cast<To*>(p[0] + i * s[0]) =
              Convert<To>(*reinterpret_cast<const From*>(p[1] + i * s[1]));
        }
      });
    });
  };
  absl::Status dispatched = DispatchWithHalf(out.dtype, "copy", outer);
  return dispatched.ok() ? status : dispatched;
}

absl::Status Fill(const StridedView& out, double value) {
  return DispatchWithHalf(out.dtype, "fill", [&](auto tag) {
    using T = decltype(tag);
    const T v = Convert<T>(value);
    RunLoop<1>({&out}, [v](const std::array<char*, 1>& p, int64_t n,
                           const std::array<int64_t, 1>& s) {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
    });
  });
}

absl::Status Arange(const StridedView& out, double start, double step) {
  return DispatchAll(out.dtype, "arange", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.ptr<T>();
    const int64_t stride = out.ndim ? out.strides[0] : 1;
    for (int64_t i = 0; i < out.numel(); ++i) {
      o[i * stride] = Convert<T>(start + static_cast<double>(i) * step);
    }
  });
}

absl::Status Linspace(const StridedView& out, double start, double end) {
  return DispatchAll(out.dtype, "linspace", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.ptr<T>();
    const int64_t n = out.numel(), stride = out.ndim ? out.strides[0] : 1;
    const double step = n > 1 ? (end - start) / static_cast<double>(n - 1) : 0;
    const int64_t half = n / 2;
    for (int64_t i = 0; i < n; ++i) {
      const double v = n == 1     ? start
                       : i < half ? start + step * static_cast<double>(i)
                                  : end - step * static_cast<double>(n - 1 - i);
      o[i * stride] = Convert<T>(v);
    }
  });
}

absl::Status Binary(BinaryOp op, const StridedView& a, const StridedView& b,
                    double alpha, const StridedView& out) {
  absl::Status inner;
  absl::Status status = DispatchAll(out.dtype, "binary op", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      // bool arithmetic: add/max/fmax/or is logical or, mul/min/fmin/and is
      // and; add's alpha gates the other operand (PyTorch: x || (alpha &&
      // y)).
      switch (op) {
        case BinaryOp::kAdd:
          if (alpha == 0) {
            Map2<T, T>(a, b, out, [](T x, T) { return x; });
          } else {
            Map2<T, T>(a, b, out, [](T x, T y) { return x || y; });
          }
          break;
        case BinaryOp::kMax:
        case BinaryOp::kFmax:
        case BinaryOp::kBitOr:
          Map2<T, T>(a, b, out, [](T x, T y) { return x || y; });
          break;
        case BinaryOp::kBitXor:
          Map2<T, T>(a, b, out, [](T x, T y) { return x != y; });
          break;
        default:
          Map2<T, T>(a, b, out, [](T x, T y) { return x && y; });
      }
    } else {
      inner = BinaryTyped<T>(op, a, b, alpha, out);
    }
  });
  return status.ok() ? inner : status;
}

}  // namespace cpu
}  // namespace tensord

// Unary maps, clamp, comparisons, logical ops and where (see elementwise.h).
#include <cmath>
#include <type_traits>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/loops.h"
#include "runtime/core/special_math.h"
#include "runtime/core/special_ops.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cpu {
namespace {

template <typename T>
void UnaryTyped(UnaryOp op, const StridedView& in, const StridedView& out) {
  using F = std::conditional_t<std::is_same_v<T, double>, double, float>;
  auto map = [&](auto f) { Map1<T, T>(in, out, f); };
  constexpr bool kInt = std::is_integral_v<T>;
  switch (op) {
    case UnaryOp::kNeg:
      return map([](T x) { return T(-x); });
    case UnaryOp::kRelu:
      return map([](T x) { return x > T{0} ? x : T{0}; });
    case UnaryOp::kAbs:
      return map([](T x) { return x < T{0} ? T(-x) : x; });
    case UnaryOp::kSign:
      return map([](T x) { return T((T{0} < x) - (x < T{0})); });
    case UnaryOp::kSquare:
      return map([](T x) { return T(x * x); });
    case UnaryOp::kExp:
      return map([](T x) { return T(std::exp(F(x))); });
    case UnaryOp::kLog:
      return map([](T x) { return T(std::log(F(x))); });
    case UnaryOp::kLog1p:
      return map([](T x) { return T(std::log1p(F(x))); });
    case UnaryOp::kExpm1:
      return map([](T x) { return T(std::expm1(F(x))); });
    case UnaryOp::kSqrt:
      return map([](T x) { return T(std::sqrt(F(x))); });
    case UnaryOp::kRsqrt:
      return map([](T x) { return T(F(1) / std::sqrt(F(x))); });
    case UnaryOp::kSin:
      return map([](T x) { return T(std::sin(F(x))); });
    case UnaryOp::kCos:
      return map([](T x) { return T(std::cos(F(x))); });
    case UnaryOp::kTanh:
      return map([](T x) { return T(std::tanh(F(x))); });
    case UnaryOp::kErf:
      return map([](T x) { return T(std::erf(F(x))); });
    case UnaryOp::kSigmoid:
      return map([](T x) { return T(F(1) / (F(1) + std::exp(-F(x)))); });
    case UnaryOp::kSilu:
      return map([](T x) { return T(F(x) / (F(1) + std::exp(-F(x)))); });
    case UnaryOp::kGelu:
      return map([](T x) {
        return T(F(0.5) * F(x) * (F(1) + std::erf(F(x) * F(M_SQRT1_2))));
      });
    case UnaryOp::kGeluTanh:  // x sigmoid(2u) = 0.5 x (1 + tanh(u))
      return map([](T x) {
        const F v = F(x);
        return T(v / (F(1) + std::exp(F(-1.5957691216057308) *
                                      (v + F(0.044715) * v * v * v))));
      });
    case UnaryOp::kReciprocal:
      return map([](T x) { return T(F(1) / F(x)); });
    case UnaryOp::kTan:
      return map([](T x) { return T(std::tan(F(x))); });
    case UnaryOp::kAtan:
      return map([](T x) { return T(std::atan(F(x))); });
    case UnaryOp::kAsin:
      return map([](T x) { return T(std::asin(F(x))); });
    case UnaryOp::kAcos:
      return map([](T x) { return T(std::acos(F(x))); });
    case UnaryOp::kSinh:
      return map([](T x) { return T(std::sinh(F(x))); });
    case UnaryOp::kCosh:
      return map([](T x) { return T(std::cosh(F(x))); });
    case UnaryOp::kAsinh:
      return map([](T x) { return T(std::asinh(F(x))); });
    case UnaryOp::kAcosh:
      return map([](T x) { return T(std::acosh(F(x))); });
    case UnaryOp::kAtanh:
      return map([](T x) { return T(std::atanh(F(x))); });
    case UnaryOp::kLog2:
      return map([](T x) { return T(std::log2(F(x))); });
    case UnaryOp::kLog10:
      return map([](T x) { return T(std::log10(F(x))); });
    case UnaryOp::kExp2:
      return map([](T x) { return T(std::exp2(F(x))); });
    case UnaryOp::kErfc:
      return map([](T x) { return T(std::erfc(F(x))); });
    // The special functions compute in double (special_math.h).
    case UnaryOp::kErfinv:
      return map([](T x) { return T(special::Erfinv(double(x))); });
    case UnaryOp::kLgamma:  // lgamma_r: std::lgamma may write signgam
      return map([](T x) {
        int sign;
        return T(::lgamma_r(double(x), &sign));
      });
    case UnaryOp::kDigamma:
      return map([](T x) { return T(special::Digamma(double(x))); });
    // torch.special's Bessel, Airy and normal-distribution functions, through
    // the map CUDA uses too (Note [Special function ops]).
    case UnaryOp::kI0:
    case UnaryOp::kI0e:
    case UnaryOp::kI1:
    case UnaryOp::kI1e:
    case UnaryOp::kNdtri:
    case UnaryOp::kLogNdtr:
    case UnaryOp::kErfcx:
    case UnaryOp::kBesselJ0:
    case UnaryOp::kBesselJ1:
    case UnaryOp::kBesselY0:
    case UnaryOp::kBesselY1:
    case UnaryOp::kBesselK0:
    case UnaryOp::kBesselK1:
    case UnaryOp::kScaledBesselK0:
    case UnaryOp::kScaledBesselK1:
    case UnaryOp::kSphericalBesselJ0:
    case UnaryOp::kAiryAi:
      return map([op](T x) { return T(special::SpecialUnary(op, double(x))); });
    case UnaryOp::kFloor:
      if constexpr (kInt)
        return map([](T x) { return x; });
      else
        return map([](T x) { return T(std::floor(x)); });
    case UnaryOp::kCeil:
      if constexpr (kInt)
        return map([](T x) { return x; });
      else
        return map([](T x) { return T(std::ceil(x)); });
    case UnaryOp::kTrunc:
      if constexpr (kInt)
        return map([](T x) { return x; });
      else
        return map([](T x) { return T(std::trunc(x)); });
    case UnaryOp::kRound:  // half to even, as PyTorch
      if constexpr (kInt)
        return map([](T x) { return x; });
      else
        return map([](T x) { return T(std::nearbyint(x)); });
    case UnaryOp::kBitwiseNot:
      if constexpr (kInt)
        return map([](T x) { return T(~x); });
      else
        return;  // rejected by shape inference
  }
}

template <typename T, typename F>
void CompareWith(const StridedView& a, const StridedView& b,
                 const StridedView& out, F f) {
  Map2<bool, T>(a, b, out, f);
}

}  // namespace

absl::Status Unary(UnaryOp op, const StridedView& in, const StridedView& out) {
  return DispatchAll(out.dtype, "unary op", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      if (op == UnaryOp::kBitwiseNot) {
        Map1<bool, bool>(in, out, [](bool x) { return !x; });
      } else {
        Map1<bool, bool>(in, out, [](bool x) { return x; });
      }
    } else {
      UnaryTyped<T>(op, in, out);
    }
  });
}

absl::Status Signbit(const StridedView& in, const StridedView& out) {
  return DispatchAll(in.dtype, "signbit", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      Map1<bool, T>(in, out, [](T x) { return bool(std::signbit(x)); });
    } else if constexpr (std::is_signed_v<T>) {
      Map1<bool, T>(in, out, [](T x) { return x < T{0}; });
    } else {
      Map1<bool, T>(in, out, [](T) { return false; });
    }
  });
}

absl::Status Polygamma(int n, const StridedView& in, const StridedView& out) {
  return DispatchAll(out.dtype, "polygamma", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      Map1<T, T>(in, out,
                 [n](T x) { return T(special::Polygamma(n, double(x))); });
    }
  });
}

absl::Status Frexp(const StridedView& in, const StridedView& mantissa,
                   const StridedView& exponent) {
  return DispatchFloat(in.dtype, "frexp", [&](auto tag) {
    using T = decltype(tag);
    RunLoop<3>({&mantissa, &exponent, &in},
               [](const std::array<char*, 3>& p, int64_t n,
                  const std::array<int64_t, 3>& s) {
                 for (int64_t i = 0; i < n; ++i) {
                   const T x = *reinterpret_cast<const T*>(p[2] + i * s[2]);
                   int e = 0;
                   *reinterpret_cast<T*>(p[0] + i * s[0]) = std::frexp(x, &e);
                   // C leaves e unspecified for inf and NaN; PyTorch's is 0.
                   *reinterpret_cast<int32_t*>(p[1] + i * s[1]) =
                       std::isfinite(x) ? e : 0;
                 }
               });
  });
}

absl::Status Clamp(const StridedView& in, bool has_lo, double lo, bool has_hi,
                   double hi, const StridedView& out) {
  absl::Status filled;
  TD_RETURN_IF_ERROR(DispatchAll(out.dtype, "clamp", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      // As PyTorch ("clamp_max_scalar_cpu" not implemented for 'Bool'): an
      // error, never an output left unwritten.
      filled =
          absl::InvalidArgumentError("clamp: bool tensors are not supported");
    } else {
      // Bounds convert to T; for integer T they were integral (checked).
      const T l = has_lo ? static_cast<T>(lo) : T{},
              h = has_hi ? static_cast<T>(hi) : T{};
      if (has_lo && has_hi) {
        Map1<T, T>(in, out, [l, h](T x) {
          if (x != x) return x;
          return x < l ? l : (x > h ? h : x);  // min wins when l > h
        });
        if (l > h) filled = Fill(out, static_cast<double>(h));
      } else if (has_lo) {
        Map1<T, T>(in, out, [l](T x) { return x < l ? l : x; });
      } else {
        Map1<T, T>(in, out, [h](T x) { return x > h ? h : x; });
      }
    }
  }));
  return filled;
}

absl::Status Compare(CompareOp op, const StridedView& a, const StridedView& b,
                     const StridedView& out) {
  return DispatchAll(a.dtype, "comparison", [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case CompareOp::kEq:
        return CompareWith<T>(a, b, out, [](T x, T y) { return x == y; });
      case CompareOp::kNe:
        return CompareWith<T>(a, b, out, [](T x, T y) { return x != y; });
      case CompareOp::kLt:
        return CompareWith<T>(a, b, out, [](T x, T y) { return x < y; });
      case CompareOp::kLe:
        return CompareWith<T>(a, b, out, [](T x, T y) { return x <= y; });
      case CompareOp::kGt:
        return CompareWith<T>(a, b, out, [](T x, T y) { return x > y; });
      case CompareOp::kGe:
        return CompareWith<T>(a, b, out, [](T x, T y) { return x >= y; });
      case CompareOp::kAnd:
        return CompareWith<T>(a, b, out,
                              [](T x, T y) { return x != T{0} && y != T{0}; });
      case CompareOp::kOr:
        return CompareWith<T>(a, b, out,
                              [](T x, T y) { return x != T{0} || y != T{0}; });
      case CompareOp::kXor:
        return CompareWith<T>(
            a, b, out, [](T x, T y) { return (x != T{0}) != (y != T{0}); });
    }
  });
}

absl::Status LogicalNot(const StridedView& in, const StridedView& out) {
  return DispatchAll(in.dtype, "logical_not", [&](auto tag) {
    using T = decltype(tag);
    Map1<bool, T>(in, out, [](T x) { return x == T{0}; });
  });
}

absl::Status Where(const StridedView& cond, const StridedView& a,
                   const StridedView& b, const StridedView& out) {
  return DispatchAll(out.dtype, "where", [&](auto tag) {
    using T = decltype(tag);
    RunLoop<4>(
        {&out, &cond, &a, &b}, [](const std::array<char*, 4>& p, int64_t n,
                                  const std::array<int64_t, 4>& s) {
          for (int64_t i = 0; i < n; ++i) {
            const bool c = *reinterpret_cast<const bool*>(p[1] + i * s[1]);
            *reinterpret_cast<T*>(p[0] + i * s[0]) =
                *reinterpret_cast<const T*>(p[c ? 2 : 3] + i * s[c ? 2 : 3]);
          }
        });
  });
}

}  // namespace cpu
}  // namespace tensord

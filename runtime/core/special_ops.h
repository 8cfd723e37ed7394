// The special-function members of UnaryOp and BinaryOp (kernel_ops.h) mapped
// to their scalar code, for the CPU kernels (kernels/cpu/unary.cc,
// elementwise.cc) and the CUDA ones (kernels/cuda/elementwise.cu).
//
// Note [Special function ops]: each op is one double-precision scalar
// function (special_math.h, bessel_math.h, airy_math.h, polynomial_math.h,
// igamma_math.h) and both devices call it through SpecialUnary/SpecialBinary,
// so the enum-to-math map exists once and CPU and CUDA compute the same thing.
// The kernels compute the unary ones and igamma/igammac in double for every
// floating dtype and round once, the polynomials in the dtype itself as
// PyTorch does (float16/bfloat16 reach them as float32, Note [Half
// compute]); CUDA launches them through
// their own functor so the common unary/binary kernels stay small.
#ifndef TENSORD_RUNTIME_CORE_SPECIAL_OPS_H_
#define TENSORD_RUNTIME_CORE_SPECIAL_OPS_H_

#include "runtime/core/airy_math.h"
#include "runtime/core/bessel_math.h"
#include "runtime/core/igamma_math.h"
#include "runtime/core/kernel_ops.h"
#include "runtime/core/polynomial_math.h"
#include "runtime/core/special_math.h"

namespace tensord {
namespace special {

TD_HOST_DEVICE constexpr bool IsSpecialUnary(UnaryOp op) {
  return op >= UnaryOp::kI0 && op <= UnaryOp::kAiryAi;
}
TD_HOST_DEVICE constexpr bool IsSpecialBinary(BinaryOp op) {
  return op >= BinaryOp::kChebyshevT && op <= BinaryOp::kIgammac;
}

TD_HOST_DEVICE inline double SpecialUnary(UnaryOp op, double x) {
  switch (op) {
    case UnaryOp::kI0:
      return BesselI0(x);
    case UnaryOp::kI0e:
      return BesselI0e(x);
    case UnaryOp::kI1:
      return BesselI1(x);
    case UnaryOp::kI1e:
      return BesselI1e(x);
    case UnaryOp::kNdtri:
      return Ndtri(x);
    case UnaryOp::kLogNdtr:
      return LogNdtr(x);
    case UnaryOp::kErfcx:
      return Erfcx(x);
    case UnaryOp::kBesselJ0:
      return BesselJ0(x);
    case UnaryOp::kBesselJ1:
      return BesselJ1(x);
    case UnaryOp::kBesselY0:
      return BesselY0(x);
    case UnaryOp::kBesselY1:
      return BesselY1(x);
    case UnaryOp::kBesselK0:
      return BesselK(0, x, false);
    case UnaryOp::kBesselK1:
      return BesselK(1, x, false);
    case UnaryOp::kScaledBesselK0:
      return BesselK(0, x, true);
    case UnaryOp::kScaledBesselK1:
      return BesselK(1, x, true);
    case UnaryOp::kSphericalBesselJ0:
      return SphericalBesselJ0(x);
    case UnaryOp::kAiryAi:
      return AiryAi(x);
    default:
      return Nan();  // not a special op (IsSpecialUnary)
  }
}

// p_n(x) with n truncated as PyTorch does (Note [Polynomial degrees]), in
// T = float or double; P(a = x, x = n) and Q(a = x, x = n) in double.
template <typename T>
TD_HOST_DEVICE T SpecialBinary(BinaryOp op, T x, T n) {
  const int64_t d = PolynomialDegree(static_cast<double>(n));
  switch (op) {
    case BinaryOp::kIgamma:
      return static_cast<T>(
          Igamma(static_cast<double>(x), static_cast<double>(n)));
    case BinaryOp::kIgammac:
      return static_cast<T>(
          Igammac(static_cast<double>(x), static_cast<double>(n)));
    case BinaryOp::kChebyshevT:
      return Chebyshev(0, x, d, 6);
    case BinaryOp::kChebyshevU:
      return Chebyshev(1, x, d, 8);
    case BinaryOp::kChebyshevV:
      return Chebyshev(2, x, d, 8);
    case BinaryOp::kChebyshevW:
      return Chebyshev(3, x, d, 8);
    case BinaryOp::kShiftedChebyshevT:
      return ShiftedChebyshev(0, x, d);
    case BinaryOp::kShiftedChebyshevU:
      return ShiftedChebyshev(1, x, d);
    case BinaryOp::kShiftedChebyshevV:
      return ShiftedChebyshev(2, x, d);
    case BinaryOp::kShiftedChebyshevW:
      return ShiftedChebyshev(3, x, d);
    case BinaryOp::kHermiteH:
      return Hermite(true, x, d);
    case BinaryOp::kHermiteHe:
      return Hermite(false, x, d);
    case BinaryOp::kLaguerreL:
      return Laguerre(x, d);
    case BinaryOp::kLegendreP:
      return Legendre(x, d);
    default:
      return static_cast<T>(Nan());  // not a special op (IsSpecialBinary)
  }
}

}  // namespace special
}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_SPECIAL_OPS_H_

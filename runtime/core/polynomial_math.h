// The orthogonal polynomials of PyTorch's torch.special as functions of
// (x, n): Chebyshev of the four kinds (T, U, V, W) and their shifted forms
// (of 2x - 1), Hermite (physicists' H, probabilists' He), Laguerre L and
// Legendre P. Scalar code for the CPU and CUDA kernels (TD_HOST_DEVICE),
// computed in the tensor's type T (float or double; float16/bfloat16 reach
// the kernels as float32) as PyTorch computes them, which decides where a
// fast-growing value overflows.
//
// Note [Polynomial degrees]: as PyTorch, n is truncated to an integer and a
// negative one gives 0 (so do NaN and infinite n, which PyTorch's cast to
// int64 makes negative); the values at x = +-1 are the exact ones. The
// three-term recurrences run n steps, as PyTorch's do, except where a closed
// form exists: Chebyshev for |x| < 1 and large n is the trigonometric form
// (cos(n acos x), ...), for |x| > 1 the hyperbolic one, so no degree makes a
// kernel loop long. Where the recurrence is the only form (Hermite,
// Laguerre, Legendre) it stops once it reaches NaN, which it keeps, and
// degrees above kMaxRecurrenceDegree give NaN: a client-chosen n must not
// hold a daemon thread for 2^63 steps.
#ifndef TENSORD_RUNTIME_CORE_POLYNOMIAL_MATH_H_
#define TENSORD_RUNTIME_CORE_POLYNOMIAL_MATH_H_

#include <cmath>
#include <cstdint>

#include "runtime/core/special_math.h"

namespace tensord {
namespace special {

constexpr int64_t kMaxRecurrenceDegree = int64_t{1} << 20;
// Above this degree Chebyshev polynomials of |x| > 1 take the hyperbolic
// closed form instead of the recurrence.
constexpr int64_t kChebyshevRecurrenceDegree = 64;

// The degree as PyTorch reads it (Note [Polynomial degrees]): -1 for NaN,
// infinities and values out of int64's range.
TD_HOST_DEVICE inline int64_t PolynomialDegree(double n) {
  if (!(n > -9.2e18 && n < 9.2e18)) return -1;
  return static_cast<int64_t>(n);
}

// The math of T = float or double under one name on host and device.
TD_HOST_DEVICE inline float Cos(float x) { return ::cosf(x); }
TD_HOST_DEVICE inline double Cos(double x) { return ::cos(x); }
TD_HOST_DEVICE inline float Sin(float x) { return ::sinf(x); }
TD_HOST_DEVICE inline double Sin(double x) { return ::sin(x); }
TD_HOST_DEVICE inline float Acos(float x) { return ::acosf(x); }
TD_HOST_DEVICE inline double Acos(double x) { return ::acos(x); }
TD_HOST_DEVICE inline float Cosh(float x) { return ::coshf(x); }
TD_HOST_DEVICE inline double Cosh(double x) { return ::cosh(x); }
TD_HOST_DEVICE inline float Sinh(float x) { return ::sinhf(x); }
TD_HOST_DEVICE inline double Sinh(double x) { return ::sinh(x); }
TD_HOST_DEVICE inline float Acosh(float x) { return ::acoshf(x); }
TD_HOST_DEVICE inline double Acosh(double x) { return ::acosh(x); }

template <typename T>
TD_HOST_DEVICE bool Finite(T v) {
  return v - v == 0;  // false for infinities and NaN
}

template <typename T>
TD_HOST_DEVICE T SignPow(T x, int64_t n) {  // sign(x)^n
  return (x < 0 && (n & 1)) ? T(-1) : T(1);
}

// The Chebyshev polynomial of kind 0..3 (T, U, V, W) with x = sign cosh(a),
// |x| > 1: cosh(n a), sinh((n+1) a) / sinh(a), cosh((n+1/2) a) / cosh(a/2),
// sinh((n+1/2) a) / sinh(a/2); V and W trade places under x -> -x
// (V_n(-y) = (-1)^n W_n(y)).
template <typename T>
TD_HOST_DEVICE T ChebyshevHyperbolic(int kind, T x, int64_t n) {
  const T a = Acosh(x < 0 ? -x : x), m = static_cast<T>(n);
  const int k = (x < 0 && kind >= 2) ? 5 - kind : kind;
  T r;
  if (k == 0) {
    r = Cosh(m * a);
  } else if (k == 1) {
    r = Sinh((m + 1) * a) / Sinh(a);
  } else if (k == 2) {
    r = Cosh((m + T(0.5)) * a) / Cosh(a / 2);
  } else {
    r = Sinh((m + T(0.5)) * a) / Sinh(a / 2);
  }
  return SignPow(x, n) * r;
}

// The four kinds of Chebyshev polynomials share p_0 = 1 and the recurrence
// p_{k+1} = 2x p_k - p_{k-1}, and differ in p_1 = x, 2x, 2x - 1, 2x + 1.
// With x = cos(theta) they are cos(n theta), sin((n+1) theta) / sin(theta),
// cos((n+1/2) theta) / cos(theta/2), sin((n+1/2) theta) / sin(theta/2):
// PyTorch's forms for |x| < 1 above the degree `trig_from` (6 for T, 8 for
// the others; the shifted ones pass theirs). Computed in T as PyTorch does,
// so values that overflow on the way become NaN as there: beyond the
// recurrence's range too (an overflow two degrees back is inf - inf).
template <typename T>
TD_HOST_DEVICE T Chebyshev(int kind, T x, int64_t n, int64_t trig_from) {
  if (n < 0) return 0;
  if (n == 0) return 1;
  if (x != x) return x;
  const T m = static_cast<T>(n), ax = x < 0 ? -x : x;
  if (ax == 1) {  // T: +-1; U: +-(n+1); V(1) = 1, W(-1) = +-1
    const T sign = SignPow(x, n);
    if (kind == 0) return sign;
    if (kind == 1) return sign * (m + 1);
    if (kind == 2) return x > 0 ? T(1) : sign * (2 * m + 1);
    return x > 0 ? 2 * m + 1 : sign;
  }
  if (ax < 1 && n > trig_from) {
    const T th = Acos(x);
    if (kind == 0) return Cos(m * th);
    if (kind == 1) return Sin((m + 1) * th) / Sin(th);
    if (kind == 2) return Cos((m + T(0.5)) * th) / Cos(th / 2);
    return Sin((m + T(0.5)) * th) / Sin(th / 2);
  }
  if (ax > 1 && n > kChebyshevRecurrenceDegree) {
    const T r = ChebyshevHyperbolic(kind, x, n);
    const bool overflowed_before = !Finite(ChebyshevHyperbolic(kind, x, n - 2));
    return Finite(r) || !overflowed_before ? r : static_cast<T>(Nan());
  }
  T p = 1;
  T q = kind == 0 ? x : kind == 1 ? 2 * x : kind == 2 ? 2 * x - 1 : 2 * x + 1;
  for (int64_t k = 1; k < n; ++k) {
    const T r = 2 * x * q - p;
    p = q;
    q = r;
  }
  return q;
}

// The shifted polynomials on [0, 1]: p*(x) = p(2x - 1); PyTorch takes the
// trigonometric forms above degree 6 (4 for W).
template <typename T>
TD_HOST_DEVICE T ShiftedChebyshev(int kind, T x, int64_t n) {
  return Chebyshev(kind, x + x - 1, n, kind == 3 ? 4 : 6);
}

// H: p_1 = 2x, p_{k+1} = 2x p_k - 2k p_{k-1}; He: p_1 = x,
// p_{k+1} = x p_k - k p_{k-1}.
template <typename T>
TD_HOST_DEVICE T Hermite(bool physicists, T x, int64_t n) {
  if (n < 0) return 0;
  if (n == 0) return 1;
  if (n > kMaxRecurrenceDegree) return static_cast<T>(Nan());
  const T c = physicists ? 2 : 1;
  T p = 1, q = c * x;
  for (int64_t k = 1; k < n; ++k) {
    const T r = c * x * q - c * static_cast<T>(k) * p;
    if (r != r) return r;
    p = q;
    q = r;
  }
  return q;
}

// L: p_1 = 1 - x, (k+1) p_{k+1} = (2k + 1 - x) p_k - k p_{k-1}; L_n(0) = 1.
template <typename T>
TD_HOST_DEVICE T Laguerre(T x, int64_t n) {
  if (n < 0) return 0;
  if (n == 0 || x == 0) return 1;
  if (n > kMaxRecurrenceDegree) return static_cast<T>(Nan());
  T p = 1, q = 1 - x;
  for (int64_t k = 1; k < n; ++k) {
    const T kt = static_cast<T>(k);
    const T r = ((2 * kt + 1 - x) * q - kt * p) / (kt + 1);
    if (r != r) return r;
    p = q;
    q = r;
  }
  return q;
}

// P: p_1 = x, (k+1) p_{k+1} = (2k + 1) x p_k - k p_{k-1}; P_n(+-1) = (+-1)^n.
template <typename T>
TD_HOST_DEVICE T Legendre(T x, int64_t n) {
  if (n < 0) return 0;
  if (n == 0) return 1;
  if (x == 1 || x == -1) return SignPow(x, n);
  if (n > kMaxRecurrenceDegree) return static_cast<T>(Nan());
  T p = 1, q = x;
  for (int64_t k = 1; k < n; ++k) {
    const T kt = static_cast<T>(k);
    const T r = ((2 * kt + 1) * x * q - kt * p) / (kt + 1);
    if (r != r) return r;
    p = q;
    q = r;
  }
  return q;
}

}  // namespace special
}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_POLYNOMIAL_MATH_H_

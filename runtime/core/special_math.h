// Scalar special functions PyTorch computes with its own code rather than
// the C library: digamma, trigamma, the Hurwitz zeta function, polygamma,
// erfinv, and the normal-distribution functions erfcx, ndtri and log_ndtr.
// One definition for the CPU kernels (kernels/cpu/unary.cc) and the
// CUDA kernels (kernels/cuda/elementwise.cu: TD_HOST_DEVICE), so both devices
// give the same values. The algorithms are PyTorch's
// (aten/src/ATen/native/Math.h: Cephes' psi and zeta, Giles' erfinv with two
// Newton steps); erfcx, ndtri and log_ndtr are written from their
// definitions here (Note [Normal tails]). They compute in double, callers
// round to their dtype.
#ifndef TENSORD_RUNTIME_CORE_SPECIAL_MATH_H_
#define TENSORD_RUNTIME_CORE_SPECIAL_MATH_H_

#include <cmath>
#include <limits>

#if defined(__CUDACC__)
#define TD_HOST_DEVICE __host__ __device__
#else
#define TD_HOST_DEVICE
#endif

namespace tensord {
namespace special {

constexpr double kPi = 3.14159265358979323846;

TD_HOST_DEVICE inline double Nan() {
  return std::numeric_limits<double>::quiet_NaN();
}
TD_HOST_DEVICE inline double Inf() {
  return std::numeric_limits<double>::infinity();
}

// psi(x) = d/dx log(gamma(x)); +-inf at +-0 (as SciPy and PyTorch), NaN at
// the negative integers.
TD_HOST_DEVICE inline double Digamma(double x) {
  if (x == 0) return ::copysign(Inf(), -x);
  if (x < 0) {
    if (x == ::trunc(x)) return Nan();
    // tan(pi * frac(x)) is more accurate than tan(pi * x).
    double q;
    const double r = ::modf(x, &q);
    return Digamma(1 - x) - kPi / ::tan(kPi * r);
  }
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == 10) return result + 2.25175258906672110764;
  double y = 0;
  if (x < 1.0e17) {
    const double a[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2,
                        7.57575757575757575758E-3, -4.16666666666666666667E-3,
                        3.96825396825396825397E-3, -8.33333333333333333333E-3,
                        8.33333333333333333333E-2};
    const double z = 1 / (x * x);
    double p = a[0];
    for (int i = 1; i < 7; ++i) p = p * z + a[i];
    y = z * p;
  }
  return result + ::log(x) - 0.5 / x - y;
}

// psi'(x): reflection below 1/2, six recurrence steps, then the asymptotic
// series.
TD_HOST_DEVICE inline double Trigamma(double x) {
  double sign = 1, result = 0;
  if (x < 0.5) {
    sign = -1;
    const double s = ::sin(kPi * x);
    result -= kPi * kPi / (s * s);
    x = 1 - x;
  }
  for (int i = 0; i < 6; ++i) {
    result += 1 / (x * x);
    x += 1;
  }
  const double ixx = 1 / (x * x);
  result +=
      (1 + 1 / (2 * x) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) /
      x;
  return sign * result;
}

// The Hurwitz zeta function sum_k (k + q)^-x: Euler-Maclaurin summation.
TD_HOST_DEVICE inline double Zeta(double x, double q) {
  const double kMachEp = 1.11022302462515654042E-16;
  const double a[] = {12.0,
                      -720.0,
                      30240.0,
                      -1209600.0,
                      47900160.0,
                      -1.8924375803183791606e9,
                      7.47242496e10,
                      -2.950130727918164224e12,
                      1.1646782814350067249e14,
                      -4.5979787224074726105e15,
                      1.8152105401943546773e17,
                      -7.1661652561756670113e18};
  if (x == 1) return Inf();
  if (x < 1) return Nan();
  if (q <= 0) {
    if (q == ::floor(q)) return Inf();
    if (x != ::floor(x)) return Nan();
  }
  double s = ::pow(q, -x), aa = q, b = 0;
  int i = 0;
  while (i < 9 || aa <= 9.0) {
    i += 1;
    aa += 1;
    b = ::pow(aa, -x);
    s += b;
    if (-kMachEp * s < b && b < kMachEp * s) return s;
  }
  const double w = aa;
  s += b * w / (x - 1);
  s -= 0.5 * b;
  double fac = 1, k = 0;
  for (int j = 0; j < 12; ++j) {
    fac *= x + k;
    b /= w;
    double t = fac * b / a[j];
    s = s + t;
    t = ::fabs(t / s);
    if (t < kMachEp) return s;
    k += 1;
    fac *= x + k;
    b /= w;
    k += 1;
  }
  return s;
}

// The n-th derivative of digamma (n >= 0; the caller checks n).
TD_HOST_DEVICE inline double Polygamma(int n, double x) {
  if (n == 0) return Digamma(x);
  if (n == 1) return Trigamma(x);
  return ((n % 2) ? 1.0 : -1.0) * ::exp(::lgamma(n + 1.0)) * Zeta(n + 1.0, x);
}

// The inverse error function: a rational first guess, two Newton steps.
TD_HOST_DEVICE inline double Erfinv(double y) {
  const double a[] = {0.886226899, -1.645349621, 0.914624893, -0.140543331};
  const double b[] = {-2.118377725, 1.442710462, -0.329097515, 0.012229801};
  const double c[] = {-1.970840454, -1.624906493, 3.429567803, 1.641345311};
  const double d[] = {3.543889200, 1.637067800};
  const double y_abs = ::fabs(y);
  if (y_abs > 1) return Nan();
  if (y_abs == 1) return ::copysign(Inf(), y);
  double x;
  if (y_abs <= 0.7) {
    const double z = y * y;
    const double num = ((a[3] * z + a[2]) * z + a[1]) * z + a[0];
    const double dem = (((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1;
    x = y * num / dem;
  } else {
    const double z = ::sqrt(-::log((1 - y_abs) / 2));
    const double num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];
    const double dem = (d[1] * z + d[0]) * z + 1;
    x = ::copysign(num, y) / dem;
  }
  const double two_over_sqrt_pi = 1.12837916709551257390;
  x -= (::erf(x) - y) / (two_over_sqrt_pi * ::exp(-x * x));
  x -= (::erf(x) - y) / (two_over_sqrt_pi * ::exp(-x * x));
  return x;
}

// Note [Normal tails]: erfc(x) underflows (x > 26.5) long before
// exp(x^2) erfc(x) ~ 1 / (x sqrt(pi)) stops being representable, and
// log(Phi(x)) = log(erfc(-x / sqrt 2) / 2) loses everything once erfc does.
// So the tails are written through erfcx: log_ndtr(x) = log(erfcx(t) / 2) -
// t^2 with t = -x / sqrt 2, and ndtri solves log(erfc(y)) = log(2p) by
// Newton in that same form, which stays accurate down to the smallest
// denormal p. CUDA has erfcx and normcdfinv, the C++ library neither: both
// devices run this code, so they give the same values.

// exp(x^2) with x^2 split exactly into hi + lo (fma), so the rounding of x^2
// (relative x^2 eps) does not reach the result.
TD_HOST_DEVICE inline double ExpSquare(double x) {
  const double hi = x * x;
  const double lo = ::fma(x, x, -hi);
  return ::exp(hi) * (1 + lo);
}

// erfcx(x) = exp(x^2) erfc(x): exact products below 26 (erfc is still a
// normal number there), the asymptotic series 1/(x sqrt(pi)) sum (-1)^k
// (2k-1)!! / (2x^2)^k above (its 12 terms reach 1e-19 at x = 26), and
// 2 exp(x^2) - erfcx(-x) for negative x (inf below about -26.6).
TD_HOST_DEVICE inline double Erfcx(double x) {
  if (x != x) return x;
  if (x < 0) {
    if (x < -26.7) return Inf();
    return 2 * ExpSquare(x) - Erfcx(-x);
  }
  if (x < 26) return ExpSquare(x) * ::erfc(x);
  if (x == Inf()) return 0;
  const double inv_2x2 = 1 / (2 * x * x);
  double term = 1, sum = 1;
  for (int k = 1; k <= 12; ++k) {
    term *= -(2 * k - 1) * inv_2x2;
    sum += term;
  }
  return sum / (x * 1.77245385090551602730);  // sqrt(pi)
}

// log(Phi(x)), Phi the standard normal CDF (Note [Normal tails]).
TD_HOST_DEVICE inline double LogNdtr(double x) {
  const double t = x * 0.70710678118654752440;  // x / sqrt(2)
  if (x < -1) return ::log(Erfcx(-t) / 2) - t * t;
  if (x <= 0) return ::log(::erfc(-t) / 2);
  return ::log1p(-::erfc(t) / 2);
}

// The quantile of the standard normal: Phi(ndtri(p)) = p. Near the middle
// sqrt(2) erfinv(2p - 1), where 2p - 1 is exact (p in [1/4, 3/4]); in the
// tails y = -ndtri(p) / sqrt 2 solves log erfc(y) = log(2p) by Newton from
// the asymptotic guess, concave so it converges after the first step
// (Note [Normal tails]). p > 3/4 by symmetry: 1 - p is exact there.
TD_HOST_DEVICE inline double Ndtri(double p) {
  if (p != p || p < 0 || p > 1) return Nan();
  if (p == 0) return -Inf();
  if (p == 1) return Inf();
  if (p >= 0.25 && p <= 0.75) return 1.41421356237309504880 * Erfinv(2 * p - 1);
  const bool upper = p > 0.5;
  const double q = upper ? 1 - p : p;
  const double log_2q = ::log(2 * q);
  double y = ::sqrt(-log_2q);
  y = ::sqrt(::fmax(-log_2q - ::log(y * 1.77245385090551602730), 0.0625));
  for (int i = 0; i < 8; ++i) {
    const double e = Erfcx(y);
    const double step =
        (::log(e) - y * y - log_2q) * e * 0.88622692545275801365;
    y += step;  // g / -g' with g' = -2 / (sqrt(pi) erfcx(y))
    if (::fabs(step) <= 1e-16 * y) break;
  }
  const double x = -1.41421356237309504880 * y;
  return upper ? -x : x;
}

}  // namespace special
}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_SPECIAL_MATH_H_

// The Bessel functions of PyTorch's torch.special (bessel_j0/j1/y0/y1, i0,
// i0e, i1, i1e, modified_bessel_k0/k1, their exp-scaled forms,
// spherical_bessel_j0) as scalar code for the CPU kernels and the CUDA ones
// (TD_HOST_DEVICE): one definition, so both devices give the same values.
// They compute in double; callers round to their dtype.
//
// Note [Bessel sources]: a library function where both devices have one --
// J0, J1, Y0, Y1 are the C library's (glibc's on the host, CUDA's libdevice
// on the GPU, the same names), I0 and I1 below 20 are libstdc++'s C++17
// std::cyl_bessel_i on the host and CUDA's cyl_bessel_i0/i1 on the GPU.
// Everything else is written here from the mathematics: the large-argument
// expansion of I (with the exponential kept apart, so i0e/i1e never
// overflow), the power series of K near 0 (A&S 9.6.13, 9.6.11), and above
// it K's integral exp(-x cosh t) cosh(nu t) over t >= 0 by the trapezoidal
// rule, which converges geometrically for this analytic, doubly decaying
// integrand (its step shrinks like 1/sqrt(x) so the error stays below 1e-17).
#ifndef TENSORD_RUNTIME_CORE_BESSEL_MATH_H_
#define TENSORD_RUNTIME_CORE_BESSEL_MATH_H_

#include <cmath>

#include "runtime/core/special_math.h"

namespace tensord {
namespace special {

// J0 is even, J1 odd; Y0 and Y1 are real for x > 0 only (NaN below, -inf at
// 0). At +-inf all four are NaN, as in PyTorch (whose expansions take
// sin/cos of infinity there; the limits would be 0); caught first, since not
// every library takes infinities.
TD_HOST_DEVICE inline double BesselJ0(double x) {
  if (::fabs(x) == Inf()) return Nan();
  return ::j0(x);
}
TD_HOST_DEVICE inline double BesselJ1(double x) {
  if (::fabs(x) == Inf()) return Nan();
  return ::j1(x);
}
TD_HOST_DEVICE inline double BesselY0(double x) {
  if (x < 0 || x == Inf()) return Nan();
  if (x == 0) return -Inf();
  return ::y0(x);
}
TD_HOST_DEVICE inline double BesselY1(double x) {
  if (x < 0 || x == Inf()) return Nan();
  if (x == 0) return -Inf();
  return ::y1(x);
}

// Above this the expansion below is exact to double precision (its smallest
// term, near k = 2x, is about exp(-2x)).
constexpr double kBesselIAsymptotic = 20;

// e^-x I_nu(x) for x >= kBesselIAsymptotic, nu = 0 or 1:
// (2 pi x)^-1/2 sum_k (-1)^k a_k / x^k, a_k = prod_{j<=k} (4nu^2 - (2j-1)^2)
// / (k! 8^k), summed until the terms stop mattering.
TD_HOST_DEVICE inline double ScaledBesselIAsymptotic(int nu, double x) {
  const double mu = 4.0 * nu * nu;
  double term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    const double odd = 2 * k - 1;
    term *= -(mu - odd * odd) / (8 * k * x);
    sum += term;
    if (::fabs(term) < 1e-17 * ::fabs(sum)) break;
  }
  return sum / ::sqrt(2 * kPi * x);
}

// I0(x), I1(x) for 0 <= x < kBesselIAsymptotic (Note [Bessel sources]).
TD_HOST_DEVICE inline double BesselI0Library(double x) {
#if defined(__CUDA_ARCH__)
  return ::cyl_bessel_i0(x);
#else
  return std::cyl_bessel_i(0.0, x);
#endif
}
TD_HOST_DEVICE inline double BesselI1Library(double x) {
#if defined(__CUDA_ARCH__)
  return ::cyl_bessel_i1(x);
#else
  return std::cyl_bessel_i(1.0, x);
#endif
}

// e^-|x| I0(x) (even) and e^-|x| I1(x) (odd).
TD_HOST_DEVICE inline double BesselI0e(double x) {
  const double a = ::fabs(x);
  if (a != a) return a;
  if (a < kBesselIAsymptotic) return ::exp(-a) * BesselI0Library(a);
  return ScaledBesselIAsymptotic(0, a);
}
TD_HOST_DEVICE inline double BesselI1e(double x) {
  const double a = ::fabs(x);
  if (a != a) return a;
  const double r = a < kBesselIAsymptotic ? ::exp(-a) * BesselI1Library(a)
                                          : ScaledBesselIAsymptotic(1, a);
  return ::copysign(r, x);
}

// I0 and I1 themselves; above kBesselIAsymptotic the scaled value times e^x,
// split in two so the result is finite as long as it is representable
// (I0(713) ~ 6.7e307 while e^713 overflows; PyTorch gives inf from 709.8).
// NaN at +-inf, as in PyTorch (whose i0e and i1e give 0 there, as here).
TD_HOST_DEVICE inline double BesselI0(double x) {
  const double a = ::fabs(x);
  if (a < kBesselIAsymptotic) return BesselI0Library(a);
  if (a == Inf()) return Nan();
  if (a != a) return a;
  const double half = ::exp(a / 2);
  return half * ScaledBesselIAsymptotic(0, a) * half;
}
TD_HOST_DEVICE inline double BesselI1(double x) {
  const double a = ::fabs(x);
  if (a != a) return a;
  double r;
  if (a < kBesselIAsymptotic) {
    r = BesselI1Library(a);
  } else if (a == Inf()) {
    return Nan();
  } else {
    const double half = ::exp(a / 2);
    r = half * ScaledBesselIAsymptotic(1, a) * half;
  }
  return ::copysign(r, x);
}

// K_nu(x) near 0 (0 < x <= 1), nu = 0 or 1, from the power series with
// t = x^2 / 4 and the harmonic numbers H_k (psi(k + 1) = H_k - gamma):
// K0 = -(log(x/2) + gamma) I0(x) + sum_{k>=1} H_k t^k / (k!)^2,
// K1 = 1/x + log(x/2) I1(x)
//      - (x/4) sum_{k>=0} (H_k + H_{k+1} - 2 gamma) t^k / (k! (k+1)!).
TD_HOST_DEVICE inline double BesselKSeries(int nu, double x) {
  constexpr double kEuler = 0.57721566490153286061;
  const double t = x * x / 4, log_half_x = ::log(x / 2);
  double h = 0;  // H_k
  double c = 1;  // t^k / (k! (k + nu)!)
  double i_sum = 0, k_sum = 0;
  for (int k = 0; k < 30; ++k) {
    if (k > 0) {
      h += 1.0 / k;
      c *= t / (static_cast<double>(k) * (k + nu));
    }
    i_sum += c;
    const double weight = nu == 0 ? h : h + (h + 1.0 / (k + 1)) - 2 * kEuler;
    k_sum += weight * c;
    if (c < 1e-18 * i_sum) break;
  }
  if (nu == 0) return -(log_half_x + kEuler) * i_sum + k_sum;
  // I1(x) = (x/2) sum t^k / (k! (k+1)!)
  return 1 / x + log_half_x * (x / 2) * i_sum - (x / 4) * k_sum;
}

// e^x K_nu(x) for x > 1: the integral of exp(-x (cosh t - 1)) cosh(nu t)
// over t >= 0 by the trapezoidal rule (Note [Bessel sources]); cosh t - 1 =
// 2 sinh^2(t/2) keeps the small-t terms exact for large x.
TD_HOST_DEVICE inline double ScaledBesselKIntegral(int nu, double x) {
  const double h = ::fmin(0.2, 0.6 / ::sqrt(x));
  double sum = 0.5;  // the t = 0 term, halved
  for (int j = 1; j < 400; ++j) {
    const double t = j * h, s = ::sinh(t / 2);
    const double term = ::exp(-2 * x * s * s) * (nu == 0 ? 1 : ::cosh(t));
    sum += term;
    if (term < 1e-18 * sum) break;
  }
  return h * sum;
}

// K0, K1 (x > 0; +inf at 0, NaN below) and their scaled forms e^x K(x).
TD_HOST_DEVICE inline double BesselK(int nu, double x, bool scaled) {
  if (x != x) return x;
  if (x < 0) return Nan();
  if (x == 0) return Inf();
  if (x == Inf()) return 0;
  if (x <= 1) {
    const double k = BesselKSeries(nu, x);
    return scaled ? ::exp(x) * k : k;
  }
  const double k = ScaledBesselKIntegral(nu, x);
  return scaled ? k : ::exp(-x) * k;
}

// j0(x) = sin(x) / x, 1 at 0 and 0 at the infinities.
TD_HOST_DEVICE inline double SphericalBesselJ0(double x) {
  if (x == 0) return 1;
  if (::fabs(x) == Inf()) return 0;
  return ::sin(x) / x;
}

}  // namespace special
}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_BESSEL_MATH_H_

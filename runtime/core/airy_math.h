// The Airy function Ai of PyTorch's torch.special.airy_ai as scalar code for
// the CPU kernels and the CUDA ones (TD_HOST_DEVICE): one definition, so
// both devices give the same values. It computes in double; callers round
// to their dtype.
//
// Note [Airy sources]: the algorithm is Cephes' airy (Moshier), which
// PyTorch's airy_ai_forward (aten/src/ATen/native/Math.h) ports: for
// x < -2.09 the oscillating form pi^-1/2 |x|^-1/4 (sin(t) (1 + z^2 F(z^2))
// - cos(t) z G(z^2)) with zeta = 2/3 |x|^3/2, t = zeta + pi/4, z = 1/zeta
// and Cephes' rationals F = AFN/AFD, G = AGN/AGD; for x >= 2.09 the
// decaying form pi^-1/2 R(1/zeta) / (2 x^1/4 e^zeta), R = AN/AD; in between
// the Maclaurin series c1 f(x) - c2 g(x). Against mpmath this is within
// 1e-15 absolute on [-10, 10] (relative 3e-14 just below 2.09, where the
// series cancels), and for x < -10 the double phase zeta is the limit
// (|zeta| ulps of Ai's envelope: 1e-6 of it at x = -1e7). Two deliberate
// differences from PyTorch (both within float32's tolerance up to |x| =
// 100): its port evaluates AFD and AGD with polevl where Cephes has p1evl
// (the leading 1 of each is not in the table), so its float64 values for
// -10 < x < -2.09 are off by up to 6.4e-6 of the envelope (near -2.09;
// 6e-11 at -10), which tensord's are not; and it computes float32 tensors
// in float32, losing ~|zeta| * 6e-8 of the phase (7e-6 absolute at x =
// -100, all of it beyond |x| ~ 1e5), where tensord computes every floating
// dtype in double and rounds once. As PyTorch: NaN at +-inf and for NaN,
// 0 above 103.892 (where Ai leaves double's normal range).
#ifndef TENSORD_RUNTIME_CORE_AIRY_MATH_H_
#define TENSORD_RUNTIME_CORE_AIRY_MATH_H_

#include <cmath>

#include "runtime/core/special_math.h"

namespace tensord {
namespace special {

// c[0] y^(n-1) + ... + c[n-1] (Cephes' polevl); with `monic`, y^n + c[0]
// y^(n-1) + ... + c[n-1] (its p1evl: the leading 1 left out of the table).
TD_HOST_DEVICE inline double Horner(const double* c, int n, double y,
                                    bool monic = false) {
  double r = monic ? 1 : 0;
  for (int i = 0; i < n; ++i) r = r * y + c[i];
  return r;
}

TD_HOST_DEVICE inline double AiryAi(double x) {
  constexpr double kSqrtPiInv = 5.64189583547756286948e-01;  // pi^-1/2
  if (x != x) return x;
  if (::fabs(x) == Inf()) return Nan();
  if (x > 103.892) return 0;
  if (x < -2.09) {
    const double afn[] = {
        -1.31696323418331795333e-01, -6.26456544431912369773e-01,
        -6.93158036036933542233e-01, -2.79779981545119124951e-01,
        -4.91900132609500318020e-02, -4.06265923594885404393e-03,
        -1.59276496239262096340e-04, -2.77649108155232920844e-06,
        -1.67787698489114633780e-08};
    const double afd[] = {
        1.33560420706553243746e+01, 3.26825032795224613948e+01,
        2.67367040941499554804e+01, 9.18707402907259625840e+00,
        1.47529146771666414581e+00, 1.15687173795188044134e-01,
        4.40291641615211203805e-03, 7.54720348287414296618e-05,
        4.51850092970580378464e-07};
    const double agn[] = {
        1.97339932091685679179e-02, 3.91103029615688277255e-01,
        1.06579897599595591108e+00, 9.39169229816650230044e-01,
        3.51465656105547619242e-01, 6.33888919628925490927e-02,
        5.85804113048388458567e-03, 2.82851600836737019778e-04,
        6.98793669997260967291e-06, 8.11789239554389293311e-08,
        3.41551784765923618484e-10};
    const double agd[] = {
        9.30892908077441974853e+00, 1.98352928718312140417e+01,
        1.55646628932864612953e+01, 5.47686069422975497931e+00,
        9.54293611618961883998e-01, 8.64580826352392193095e-02,
        4.12656523824222607191e-03, 1.01259085116509135510e-04,
        1.17166733214413521882e-06, 4.91834570062930015649e-09};
    const double zeta = -2.0 * x * ::sqrt(-x) / 3.0;
    const double z = 1 / zeta, zz = z * z;
    const double f = Horner(afn, 9, zz) / Horner(afd, 9, zz, true);
    const double g = Horner(agn, 11, zz) / Horner(agd, 10, zz, true);
    const double t = zeta + 0.25 * kPi;
    return kSqrtPiInv / ::sqrt(::sqrt(-x)) *
           (::sin(t) * (1 + zz * f) - ::cos(t) * (z * g));
  }
  if (x >= 2.09) {
    const double an[] = {
        3.46538101525629032477e-01, 1.20075952739645805542e+01,
        7.62796053615234516538e+01, 1.68089224934630576269e+02,
        1.59756391350164413639e+02, 7.05360906840444183113e+01,
        1.40264691163389668864e+01, 9.99999999999999995305e-01};
    const double ad[] = {
        5.67594532638770212846e-01, 1.47562562584847203173e+01,
        8.45138970141474626562e+01, 1.77318088145400459522e+02,
        1.64234692871529701831e+02, 7.14778400825575695274e+01,
        1.40959135607834029598e+01, 1.00000000000000000470e+00};
    const double zeta = 2.0 * x * ::sqrt(x) / 3.0;
    const double r = Horner(an, 8, 1 / zeta) / Horner(ad, 8, 1 / zeta);
    return kSqrtPiInv * r / (2.0 * ::sqrt(::sqrt(x)) * ::exp(zeta));
  }
  // Ai(x) = c1 f(x) - c2 g(x), f = sum 3^k (1/3)_k x^3k / (3k)!, g = sum
  // 3^k (2/3)_k x^(3k+1) / (3k+1)!: term by term until f's last one stops
  // mattering (|x| < 2.09: fewer than 15 steps).
  constexpr double kEpsilon = 2.220446049250313e-16;
  const double z = x * x * x;
  double f = 1, g = x, m = 1, n = x, k = 1;
  for (int step = 0; step < 60; ++step) {
    m *= z;
    k += 1;
    m /= k;
    n *= z;
    k += 1;
    n /= k;
    m /= k;
    f += m;
    k += 1;
    n /= k;
    g += n;
    if (!(::fabs(m / f) > kEpsilon)) break;
  }
  return 0.355028053887817239260 * f - 0.258819403792806798405 * g;
}

}  // namespace special
}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_AIRY_MATH_H_

// The trigonometric, hyperbolic, logarithmic and special-function maps
// (unary.cc, elementwise.cc over runtime/core/special_math.h, bessel_math.h,
// polynomial_math.h) against values
// computed by hand or from closed forms (pi^2/6 = zeta(2) = trigamma(1), ...),
// in float32 and float64, with the edge cases PyTorch defines (poles, -0.0,
// NaN handling of fmax/fmin, C's fmod sign).
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/test_views.h"

namespace tensord {
namespace cpu {
namespace {

using testing::View;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

template <typename T>
std::vector<T> RunUnary(UnaryOp op, std::vector<T> x) {
  std::vector<T> y(x.size());
  const int64_t n = static_cast<int64_t>(x.size());
  EXPECT_TRUE(Unary(op, View(x, {n}), View(y, {n})).ok());
  return y;
}

template <typename T>
std::vector<T> RunBinary(BinaryOp op, std::vector<T> a, std::vector<T> b) {
  std::vector<T> y(a.size());
  const int64_t n = static_cast<int64_t>(a.size());
  EXPECT_TRUE(Binary(op, View(a, {n}), View(b, {n}), 1.0, View(y, {n})).ok());
  return y;
}

// Expected value (NaN and infinities exactly, the rest to a relative 1e-6
// in float32 and 1e-12 in float64).
template <typename T>
void ExpectValues(const std::vector<T>& got, const std::vector<double>& want,
                  const char* what, double rtol64 = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  const double rtol = sizeof(T) == 4 ? 1e-6 : rtol64;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << "[" << i << "]: " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(static_cast<double>(got[i]), want[i])
          << what << "[" << i << "]";
    } else {
      EXPECT_NEAR(got[i], want[i], rtol * std::max(1.0, std::abs(want[i])))
          << what << "[" << i << "]";
    }
  }
}

template <typename T>
void CheckUnaryMaps() {
  const std::vector<T> x = {0.5, -0.25, 0};
  ExpectValues(RunUnary(UnaryOp::kTan, x), {std::tan(0.5), std::tan(-0.25), 0},
               "tan");
  ExpectValues(RunUnary(UnaryOp::kAtan, std::vector<T>{1, -1, 0}),
               {kPi / 4, -kPi / 4, 0}, "atan");
  ExpectValues(RunUnary(UnaryOp::kAsin, std::vector<T>{0.5, 1, 2}),
               {kPi / 6, kPi / 2, kNan}, "asin");
  ExpectValues(RunUnary(UnaryOp::kAcos, std::vector<T>{0.5, -1, 1}),
               {kPi / 3, kPi, 0}, "acos");
  ExpectValues(RunUnary(UnaryOp::kSinh, std::vector<T>{1, 0}),
               {(std::exp(1.0) - std::exp(-1.0)) / 2, 0}, "sinh");
  ExpectValues(RunUnary(UnaryOp::kCosh, std::vector<T>{1, 0}),
               {(std::exp(1.0) + std::exp(-1.0)) / 2, 1}, "cosh");
  ExpectValues(RunUnary(UnaryOp::kAsinh, std::vector<T>{0.75, 0}),
               {std::log(0.75 + 1.25), 0}, "asinh");
  ExpectValues(RunUnary(UnaryOp::kAcosh, std::vector<T>{1.25, 1, 0.5}),
               {std::log(1.25 + 0.75), 0, kNan}, "acosh");
  ExpectValues(RunUnary(UnaryOp::kAtanh, std::vector<T>{0.6, 1, -1}),
               {0.5 * std::log(1.6 / 0.4), kInf, -kInf}, "atanh");
  ExpectValues(RunUnary(UnaryOp::kLog2, std::vector<T>{8, 0.25, 0, -1}),
               {3, -2, -kInf, kNan}, "log2");
  ExpectValues(RunUnary(UnaryOp::kLog10, std::vector<T>{1000, 0.01}), {3, -2},
               "log10");
  ExpectValues(RunUnary(UnaryOp::kExp2, std::vector<T>{3, -1, 0.5}),
               {8, 0.5, std::sqrt(2.0)}, "exp2");
  ExpectValues(
      RunUnary(UnaryOp::kErfc, std::vector<T>{0, 1, static_cast<T>(-kInf)}),
      {1, 1 - std::erf(1.0), 2}, "erfc");
}

TEST(MathKernelsTest, UnaryMapsFloat32) { CheckUnaryMaps<float>(); }
TEST(MathKernelsTest, UnaryMapsFloat64) { CheckUnaryMaps<double>(); }

template <typename T>
void CheckSpecialFunctions() {
  // erfinv: erf(0.4769362762044699) = 0.5; +-1 are the poles.
  ExpectValues(RunUnary(UnaryOp::kErfinv, std::vector<T>{0.5, -0.9, 1, -1, 2}),
               {0.4769362762044699, -1.1630871536766743, kInf, -kInf, kNan},
               "erfinv");
  // lgamma(1/2) = log(sqrt(pi)); lgamma(-1/2) = log(2 sqrt(pi)); pole at 0.
  ExpectValues(RunUnary(UnaryOp::kLgamma, std::vector<T>{0.5, -0.5, 1, 0}),
               {0.5 * std::log(kPi), std::log(2 * std::sqrt(kPi)), 0, kInf},
               "lgamma");
  // digamma(1) = -gamma; digamma(1/2) = -gamma - 2 log 2; the reflection
  // gives digamma(-1/2) = digamma(3/2) = digamma(1/2) + 2; poles: -inf at
  // +0, NaN at the negative integers; digamma(10) takes the tabled value.
  const double euler = 0.57721566490153286061;
  ExpectValues(
      RunUnary(UnaryOp::kDigamma, std::vector<T>{1, 0.5, -0.5, 0, -2, 10}),
      {-euler, -euler - 2 * std::log(2.0), -euler - 2 * std::log(2.0) + 2,
       -kInf, kNan, 2.25175258906672110764},
      "digamma");
}

TEST(MathKernelsTest, SpecialFunctionsFloat32) {
  CheckSpecialFunctions<float>();
}
TEST(MathKernelsTest, SpecialFunctionsFloat64) {
  CheckSpecialFunctions<double>();
}

TEST(MathKernelsTest, PolygammaFromZetaValues) {
  // polygamma(n, 1) = (-1)^(n+1) n! zeta(n + 1).
  const double zeta3 = 1.2020569031595942854;
  const std::vector<double> want[] = {
      {-0.57721566490153286061},
      {kPi * kPi / 6},
      {-2 * zeta3},
      {std::pow(kPi, 4) / 15},
  };
  for (int n = 0; n < 4; ++n) {
    std::vector<double> in = {1}, out(1);
    ASSERT_TRUE(Polygamma(n, View(in, {1}), View(out, {1})).ok());
    // PyTorch's trigamma series stops at relative 1e-9 (so does ours).
    ExpectValues(out, want[n], "polygamma", 1e-9);
  }
  // trigamma(1/2) = pi^2 / 2.
  std::vector<double> in = {0.5}, out(1);
  ASSERT_TRUE(Polygamma(1, View(in, {1}), View(out, {1})).ok());
  ExpectValues(out, {kPi * kPi / 2}, "trigamma", 1e-9);
}

TEST(MathKernelsTest, Zeta) {
  // zeta(2, 1) = pi^2/6, zeta(3, 2) = zeta(3) - 1, zeta(4, 0.5) =
  // (2^4 - 1) zeta(4) = pi^4 / 6; x = 1 is the pole, x < 1 NaN.
  ExpectValues(
      RunBinary<double>(BinaryOp::kZeta, {2, 3, 4, 1, 0.5}, {1, 2, 0.5, 1, 1}),
      {kPi * kPi / 6, 0.2020569031595942854, std::pow(kPi, 4) / 6, kInf, kNan},
      "zeta");
}

// torch.special's Bessel functions (runtime/core/bessel_math.h): values at
// 0 and the poles, PyTorch's NaN at +-inf, and the Wronskians, which tie J
// to Y and I to K: J1 Y0 - J0 Y1 = 2 / (pi x), I0 K1 + I1 K0 = 1 / x (also
// in the exp-scaled forms, where the factors e^x and e^-x cancel).
template <typename T>
void CheckBesselFunctions() {
  ExpectValues(RunUnary(UnaryOp::kBesselJ0, std::vector<T>{0, 1, -1, T(kInf)}),
               {1, 0.76519768655796655145, 0.76519768655796655145, kNan}, "j0");
  ExpectValues(RunUnary(UnaryOp::kBesselJ1, std::vector<T>{0, 1, -1}),
               {0, 0.44005058574493351596, -0.44005058574493351596}, "j1");
  ExpectValues(RunUnary(UnaryOp::kBesselY0, std::vector<T>{0, -1, T(kInf)}),
               {-kInf, kNan, kNan}, "y0");
  ExpectValues(RunUnary(UnaryOp::kI0, std::vector<T>{0, 1, -1, T(kInf)}),
               {1, 1.2660658777520083356, 1.2660658777520083356, kNan}, "i0");
  ExpectValues(RunUnary(UnaryOp::kI1, std::vector<T>{0, 1, -1}),
               {0, 0.56515910399248502721, -0.56515910399248502721}, "i1");
  ExpectValues(RunUnary(UnaryOp::kI0e, std::vector<T>{0, -1, T(kInf)}),
               {1, 1.2660658777520083356 * std::exp(-1.0), 0}, "i0e");
  ExpectValues(RunUnary(UnaryOp::kI1e, std::vector<T>{0, -1, T(-kInf)}),
               {0, -0.56515910399248502721 * std::exp(-1.0), 0}, "i1e");
  ExpectValues(RunUnary(UnaryOp::kBesselK0, std::vector<T>{0, -1, T(kInf)}),
               {kInf, kNan, 0}, "k0");
  ExpectValues(
      RunUnary(UnaryOp::kSphericalBesselJ0, std::vector<T>{0, T(kPi / 2)}),
      {1, 2 / kPi}, "spherical_j0");
}

TEST(MathKernelsTest, BesselFunctionsFloat32) { CheckBesselFunctions<float>(); }
TEST(MathKernelsTest, BesselFunctionsFloat64) {
  CheckBesselFunctions<double>();
}

TEST(MathKernelsTest, BesselWronskians) {
  const std::vector<double> x = {0.1, 0.5, 1, 1.5, 2, 5, 20, 30, 100};
  const auto j0 = RunUnary(UnaryOp::kBesselJ0, x),
             j1 = RunUnary(UnaryOp::kBesselJ1, x),
             y0 = RunUnary(UnaryOp::kBesselY0, x),
             y1 = RunUnary(UnaryOp::kBesselY1, x);
  const auto i0 = RunUnary(UnaryOp::kI0e, x), i1 = RunUnary(UnaryOp::kI1e, x),
             k0 = RunUnary(UnaryOp::kScaledBesselK0, x),
             k1 = RunUnary(UnaryOp::kScaledBesselK1, x);
  const auto k0u = RunUnary(UnaryOp::kBesselK0, x),
             k1u = RunUnary(UnaryOp::kBesselK1, x),
             i0u = RunUnary(UnaryOp::kI0, x), i1u = RunUnary(UnaryOp::kI1, x);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR((j1[i] * y0[i] - j0[i] * y1[i]) * kPi * x[i] / 2, 1, 1e-12)
        << x[i];
    EXPECT_NEAR((i0[i] * k1[i] + i1[i] * k0[i]) * x[i], 1, 1e-13) << x[i];
    EXPECT_NEAR((i0u[i] * k1u[i] + i1u[i] * k0u[i]) * x[i], 1, 1e-13) << x[i];
  }
}

TEST(MathKernelsTest, BesselLargeArguments) {
  // e^x K0(x) ~ sqrt(pi / 2x) (1 - 1/(8x) + 9/(128 x^2) - 225/(3072 x^3)),
  // e^-x I0(x) ~ (2 pi x)^-1/2 (1 + 1/(8x) + 9/(128 x^2) + 225/(3072 x^3)),
  // to 1e-14 at x = 1000; I0 stays finite up to 713 (e^713 overflows).
  const double x = 1000, u = 1 / x;
  const double s = 1 + u * (0.125 + u * (9.0 / 128 + u * 225.0 / 3072));
  const double a = 1 + u * (-0.125 + u * (9.0 / 128 - u * 225.0 / 3072));
  ExpectValues(RunUnary(UnaryOp::kScaledBesselK0, std::vector<double>{x}),
               {std::sqrt(kPi / (2 * x)) * a}, "k0e", 1e-13);
  ExpectValues(RunUnary(UnaryOp::kI0e, std::vector<double>{-x}),
               {s / std::sqrt(2 * kPi * x)}, "i0e", 1e-13);
  ExpectValues(RunUnary(UnaryOp::kBesselK0, std::vector<double>{x}), {0}, "k0");
  EXPECT_TRUE(
      std::isfinite(RunUnary(UnaryOp::kI0, std::vector<double>{713})[0]));
}

// The normal-distribution functions: ndtri inverts Phi(x) = erfc(-x/sqrt2)/2
// into both tails, log_ndtr(x) ~ -x^2/2 - log(-x sqrt(2 pi)) + log(1 - 1/x^2
// + 3/x^4 - 15/x^6) far left, erfcx(x) ~ (1 - 1/(2x^2) + 3/(4x^4)) /
// (x sqrt(pi)) far right.
TEST(MathKernelsTest, NormalDistributionFunctions) {
  const std::vector<double> xs = {-37, -20, -5, -1, 0.5, 2};  // p exact enough
  std::vector<double> p;
  for (double x : xs) p.push_back(std::erfc(-x / std::sqrt(2.0)) / 2);
  ExpectValues(RunUnary(UnaryOp::kNdtri, p), xs, "ndtri(Phi(x))", 1e-12);
  ExpectValues(RunUnary(UnaryOp::kNdtri, std::vector<double>{0.5, 0, 1, 1.5}),
               {0, -kInf, kInf, kNan}, "ndtri");
  const double x = -40, v = 1 / (x * x);
  const double tail = -x * x / 2 - std::log(-x * std::sqrt(2 * kPi)) +
                      std::log(1 - v + 3 * v * v - 15 * v * v * v);
  ExpectValues(RunUnary(UnaryOp::kLogNdtr, std::vector<double>{x, 0, 10}),
               {tail, -std::log(2.0), -std::erfc(10 / std::sqrt(2.0)) / 2},
               "log_ndtr", 1e-12);
  const double big = 1000, w = 1 / (2 * big * big);
  ExpectValues(
      RunUnary(UnaryOp::kErfcx, std::vector<double>{0, 1, big, kInf, -kInf}),
      {1, std::exp(1.0) * std::erfc(1.0),
       (1 - w + 3 * w * w) / (big * std::sqrt(kPi)), 0, kInf},
      "erfcx");
}

// The orthogonal polynomials (runtime/core/polynomial_math.h) at degrees
// 0..12 and 30, 100 against their closed forms on x = cos(t): T_n = cos(nt),
// U_n = sin((n+1)t)/sin t, V_n = cos((n+1/2)t)/cos(t/2),
// W_n = sin((n+1/2)t)/sin(t/2); the shifted ones at (1 + cos t) / 2.
template <typename T>
void CheckChebyshev() {
  const double t = 0.7, c = std::cos(t);
  for (int n : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 30, 100}) {
    const std::vector<T> x = {T(c), T((1 + c) / 2)};
    const std::vector<T> deg = {T(n), T(n)};
    const double m = n;
    const double want[4] = {std::cos(m * t),
                            std::sin((m + 1) * t) / std::sin(t),
                            std::cos((m + 0.5) * t) / std::cos(t / 2),
                            std::sin((m + 0.5) * t) / std::sin(t / 2)};
    const BinaryOp kinds[4][2] = {
        {BinaryOp::kChebyshevT, BinaryOp::kShiftedChebyshevT},
        {BinaryOp::kChebyshevU, BinaryOp::kShiftedChebyshevU},
        {BinaryOp::kChebyshevV, BinaryOp::kShiftedChebyshevV},
        {BinaryOp::kChebyshevW, BinaryOp::kShiftedChebyshevW}};
    for (int k = 0; k < 4; ++k) {
      // float32 recurrences lose about n ulps.
      const double tol = sizeof(T) == 4 ? 2e-6 * (n + 1) : 1e-12;
      EXPECT_NEAR(RunBinary<T>(kinds[k][0], x, deg)[0], want[k], tol) << k << n;
      EXPECT_NEAR(RunBinary<T>(kinds[k][1], x, deg)[1], want[k], tol) << k << n;
    }
  }
  // At +-1 the exact values; n < 0, NaN n give 0; n is truncated.
  const std::vector<T> ends = {1, -1, -1, -1, 0.5, 0.5, 0.5};
  const std::vector<T> n = {5, 5, 4, -2, T(kNan), T(2.7), T(-0.5)};
  ExpectValues(RunBinary<T>(BinaryOp::kChebyshevT, ends, n),
               {1, -1, 1, 0, 0, -0.5, 1}, "T_n");
  ExpectValues(RunBinary<T>(BinaryOp::kChebyshevU, ends, n),
               {6, -6, 5, 0, 0, 0, 1}, "U_n");
  ExpectValues(RunBinary<T>(BinaryOp::kChebyshevV, ends, n),
               {1, -11, 9, 0, 0, -1, 1}, "V_n");
  ExpectValues(RunBinary<T>(BinaryOp::kChebyshevW, ends, n),
               {11, -1, 1, 0, 0, 1, 1}, "W_n");
}

TEST(MathKernelsTest, ChebyshevFloat32) { CheckChebyshev<float>(); }
TEST(MathKernelsTest, ChebyshevFloat64) { CheckChebyshev<double>(); }

TEST(MathKernelsTest, HermiteLaguerreLegendre) {
  const double x = 0.7, x2 = x * x;
  const std::vector<double> xs(4, x), n = {3, 4, 0, -1};
  ExpectValues(RunBinary(BinaryOp::kHermiteH, xs, n),
               {8 * x2 * x - 12 * x, 16 * x2 * x2 - 48 * x2 + 12, 1, 0}, "H_n");
  ExpectValues(RunBinary(BinaryOp::kHermiteHe, xs, n),
               {x2 * x - 3 * x, x2 * x2 - 6 * x2 + 3, 1, 0}, "He_n");
  const std::vector<double> h12 =
      RunBinary<double>(BinaryOp::kHermiteH, {x / std::sqrt(2.0)}, {12});
  const std::vector<double> he12 =
      RunBinary<double>(BinaryOp::kHermiteHe, {x}, {12});
  EXPECT_NEAR(h12[0], 64 * he12[0], 1e-10 * std::abs(h12[0]));
  ExpectValues(RunBinary(BinaryOp::kLaguerreL, xs, n),
               {(-x2 * x + 9 * x2 - 18 * x + 6) / 6,
                (x2 * x2 - 16 * x2 * x + 72 * x2 - 96 * x + 24) / 24, 1, 0},
               "L_n");
  ExpectValues(
      RunBinary(BinaryOp::kLegendreP, xs, n),
      {(5 * x2 * x - 3 * x) / 2, (35 * x2 * x2 - 30 * x2 + 3) / 8, 1, 0},
      "P_n");
  // The recurrences themselves at degree 12: (n+1) P_{n+1} = (2n+1) x P_n -
  // n P_{n-1}, and P_n(+-1) = (+-1)^n, L_n(0) = 1.
  const auto p =
      RunBinary<double>(BinaryOp::kLegendreP, {x, x, x}, {10, 11, 12});
  EXPECT_NEAR(12 * p[2], 23 * x * p[1] - 11 * p[0], 1e-13);
  ExpectValues(RunBinary<double>(BinaryOp::kLegendreP, {1, -1, -1}, {7, 7, 8}),
               {1, -1, 1}, "P_n(+-1)");
  ExpectValues(RunBinary<double>(BinaryOp::kLaguerreL, {0}, {9}), {1},
               "L_9(0)");
}

TEST(MathKernelsTest, FmaxFminIgnoreNan) {
  ExpectValues(
      RunBinary<float>(BinaryOp::kFmax, {1, NAN, NAN, -2}, {NAN, 3, NAN, -5}),
      {1, 3, kNan, -2}, "fmax");
  ExpectValues(RunBinary<double>(BinaryOp::kFmin, {1, kNan, kNan, -2},
                                 {kNan, 3, kNan, -5}),
               {1, 3, kNan, -5}, "fmin");
  std::vector<int64_t> a = {4, -7}, b = {9, -8}, y(2);
  ASSERT_TRUE(
      Binary(BinaryOp::kFmax, View(a, {2}), View(b, {2}), 1, View(y, {2}))
          .ok());
  EXPECT_EQ(y, (std::vector<int64_t>{9, -7}));
}

TEST(MathKernelsTest, FmodKeepsTheSignOfTheDividend) {
  ExpectValues(
      RunBinary<double>(BinaryOp::kFmod, {-7.5, 7.5, 1, 3}, {2, -2, 0, kInf}),
      {-1.5, 1.5, kNan, 3}, "fmod");
  std::vector<int64_t> a = {-7, 7, 5}, b = {3, -3, 0}, y(3);
  ASSERT_TRUE(
      Binary(BinaryOp::kFmod, View(a, {3}), View(b, {3}), 1, View(y, {3}))
          .ok());
  EXPECT_EQ(y, (std::vector<int64_t>{-1, 1, 0}));  // / 0 gives 0, as div
}

TEST(MathKernelsTest, HypotCopysignNextafter) {
  ExpectValues(RunBinary<float>(BinaryOp::kHypot, {3, 1e30f, 0}, {4, 1e30f, 0}),
               {5, 1e30 * std::sqrt(2.0), 0}, "hypot");
  const std::vector<double> c =
      RunBinary<double>(BinaryOp::kCopysign, {2, -3, 0}, {-0.0, 1, -1});
  EXPECT_EQ(c[0], -2);
  EXPECT_EQ(c[1], 3);
  EXPECT_TRUE(std::signbit(c[2]));
  const std::vector<float> f =
      RunBinary<float>(BinaryOp::kNextafter, {1, 1, 0}, {2, 0, 1});
  EXPECT_EQ(f[0], 1 + std::numeric_limits<float>::epsilon());
  EXPECT_EQ(f[1], 1 - std::numeric_limits<float>::epsilon() / 2);
  EXPECT_EQ(f[2], std::numeric_limits<float>::denorm_min());
}

TEST(MathKernelsTest, SignbitSeesNegativeZero) {
  std::vector<double> x = {-0.0, 0.0, -1, 2, -kNan};
  bool y[5];
  StridedView out = View(x, {5});
  out.data = y;
  out.dtype = DType::kBool;
  ASSERT_TRUE(Signbit(View(x, {5}), out).ok());
  EXPECT_TRUE(y[0]);
  EXPECT_FALSE(y[1]);
  EXPECT_TRUE(y[2]);
  EXPECT_FALSE(y[3]);
  EXPECT_EQ(y[4], std::signbit(-kNan));
}

}  // namespace
}  // namespace cpu
}  // namespace tensord

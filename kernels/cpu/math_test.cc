// The trigonometric, hyperbolic, logarithmic and special-function maps
// (unary.cc, elementwise.cc over runtime/core/special_math.h) against values
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

// Ai (runtime/core/airy_math.h through the unary kernel) against values from
// mpmath (30 digits) on each branch of Cephes' algorithm and at its edges
// (+-2.09), far out on both sides, at Ai's zeros, and PyTorch's special
// values; float32 is the double value rounded once (Note [Airy sources]).
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

template <typename T>
std::vector<T> Airy(std::vector<T> x) {
  std::vector<T> y(x.size());
  const int64_t n = static_cast<int64_t>(x.size());
  EXPECT_TRUE(Unary(UnaryOp::kAiryAi, View(x, {n}), View(y, {n})).ok());
  return y;
}

struct Point {
  double x, ai;
};
// mpmath.airyai(x), 20 digits.
const std::vector<Point>& Points() {
  static const auto* points = new std::vector<Point>{
      {-1000, 0.055971895773019918842},  {-100, 0.17675339323955287809},
      {-10, 0.040241238486443190689},    {-5, 0.35076100902411431979},
      {-3, -0.37881429367765807435},     {-2.5, -0.11232506769296608919},
      {-2.1, 0.16348451299929273734},    {-2.09, 0.17005055173202993948},
      {-2, 0.22740742820168557599},      {-1, 0.5355608832923521188},
      {-0.5, 0.4757280916105395888},     {0, 0.35502805388781723926},
      {0.5, 0.23169360648083348977},     {1, 0.13529241631288141552},
      {2, 0.034924130423274379135},      {2.09, 0.030420318363198371081},
      {2.5, 0.015725923380470489995},    {5, 0.00010834442813607441735},
      {8, 4.6922076160992316256e-8},     {10, 1.1047532552898685934e-10},
      {20, 1.6916728686705403136e-27},   {50, 4.5849417240748284783e-104},
      {100, 2.6344821520881844896e-291}, {103.5, 1.2145593287760307652e-306},
  };
  return *points;
}

TEST(AiryTest, Float64AgainstMpmath) {
  std::vector<double> x;
  for (const Point& p : Points()) x.push_back(p.x);
  const std::vector<double> y = Airy(x);
  for (size_t i = 0; i < x.size(); ++i) {
    const Point& p = Points()[i];
    // For x < -2.09 against Ai's envelope pi^-1/2 |x|^-1/4, whose phase
    // zeta = 2/3 |x|^3/2 costs that many ulps (Note [Airy sources]); else
    // relative: 3e-14 where the series cancels (near 2.09), and e^-zeta's
    // zeta ulps far right.
    const double tol =
        p.x < -2.09
            ? 4e-16 * std::pow(-p.x, 1.25)
            : (3e-14 + 2e-16 * std::pow(std::fabs(p.x), 1.5)) * std::fabs(p.ai);
    EXPECT_NEAR(y[i], p.ai, tol) << "Ai(" << p.x << ")";
  }
}

TEST(AiryTest, Float32IsTheDoubleRoundedOnce) {
  std::vector<float> x;
  for (const Point& p : Points()) x.push_back(static_cast<float>(p.x));
  const std::vector<float> y = Airy(x);
  for (size_t i = 0; i < x.size(); ++i) {
    const Point& p = Points()[i];
    if (static_cast<double>(x[i]) != p.x) continue;  // -2.1, +-2.09: inexact
    if (std::fabs(p.ai) < std::numeric_limits<float>::min()) {
      EXPECT_LT(std::fabs(y[i]), std::numeric_limits<float>::min()) << p.x;
    } else {
      EXPECT_EQ(y[i], static_cast<float>(p.ai)) << "Ai(" << p.x << ")";
    }
  }
}

TEST(AiryTest, ZerosEdgesAndSpecialValues) {
  // The first two zeros of Ai (mpmath.airyaizero, rounded to double: Ai
  // there is 2.7e-17 and -2.7e-16).
  const std::vector<double> zeros =
      Airy<double>({-2.338107410459767, -4.08794944413097});
  EXPECT_NEAR(zeros[0], 2.7433e-17, 4e-16);
  EXPECT_NEAR(zeros[1], -2.7203e-16, 4e-16);
  // Both sides of the branch edges agree (the series against the rationals).
  for (double edge : {-2.09, 2.09}) {
    const std::vector<double> y = Airy<double>(
        {std::nextafter(edge, -kInf), edge, std::nextafter(edge, kInf)});
    EXPECT_NEAR(y[0], y[1], 2e-15) << edge;
    EXPECT_NEAR(y[2], y[1], 2e-15) << edge;
  }
  // As PyTorch: NaN at +-inf and for NaN, 0 above 103.892; -0.0 is 0.
  const std::vector<double> y =
      Airy<double>({kInf, -kInf, kNan, 103.9, 1e300, -0.0});
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], 0);
  EXPECT_EQ(y[4], 0);
  EXPECT_EQ(y[5], 0.35502805388781723926);
}

}  // namespace
}  // namespace cpu
}  // namespace tensord

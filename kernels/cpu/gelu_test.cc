// gelu.h: float64 against the closed forms (std::erf, std::tanh), the
// backward against central finite differences of the forward, and float32
// (vec_math.h's erf and exp) against float64 over [-10, 10], both forms.
#include "kernels/cpu/gelu.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/test_views.h"

namespace tensord {
namespace cpu {
namespace {

using testing::View;

double Exact(double x, bool tanh) {
  if (!tanh) return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  const double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1 + std::tanh(u));
}

std::vector<double> Grid(int64_t n, double lo, double hi) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * i / (n - 1);
  return v;
}

class GeluTest : public ::testing::TestWithParam<bool> {};

TEST_P(GeluTest, Float64FormulaAndFiniteDifferences) {
  const bool tanh = GetParam();
  const int64_t n = 401;
  auto x = Grid(n, -8, 8), y = x, ones = std::vector<double>(n, 1.0), dx = x;
  ASSERT_TRUE(GeluForward(View(x, {n}), n, tanh, View(y, {n})).ok());
  ASSERT_TRUE(
      GeluBackward(View(ones, {n}), View(x, {n}), n, tanh, View(dx, {n})).ok());
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(y[i], Exact(x[i], tanh), 1e-14) << x[i];
    const double h = 1e-6;
    const double fd = (Exact(x[i] + h, tanh) - Exact(x[i] - h, tanh)) / (2 * h);
    EXPECT_NEAR(dx[i], fd, 1e-8) << x[i];
  }
}

TEST_P(GeluTest, Float32MatchesFloat64) {
  const bool tanh = GetParam();
  const int64_t n = 200001;  // the pool splits it
  auto xd = Grid(n, -10, 10), yd = xd, gd = Grid(n, 2, -1), dxd = xd;
  std::vector<float> xf(xd.begin(), xd.end()), gf(gd.begin(), gd.end()), yf(n),
      dxf(n);
  for (int64_t i = 0; i < n; ++i) xd[i] = xf[i], gd[i] = gf[i];
  ASSERT_TRUE(GeluForward(View(xd, {n}), n, tanh, View(yd, {n})).ok());
  ASSERT_TRUE(GeluForward(View(xf, {n}), n, tanh, View(yf, {n})).ok());
  ASSERT_TRUE(
      GeluBackward(View(gd, {n}), View(xd, {n}), n, tanh, View(dxd, {n})).ok());
  ASSERT_TRUE(
      GeluBackward(View(gf, {n}), View(xf, {n}), n, tanh, View(dxf, {n})).ok());
  for (int64_t i = 0; i < n; ++i) {
    // float32's resolution near |x| (erf's error is < 5e-7 absolute).
    ASSERT_NEAR(yf[i], yd[i], 1e-6 * (1 + std::abs(xd[i]))) << xd[i];
    ASSERT_NEAR(dxf[i], dxd[i], 2e-6 * (1 + std::abs(xd[i]))) << xd[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, GeluTest, ::testing::Values(false, true));

TEST(Gelu, NanStaysNan) {
  for (bool tanh : {false, true}) {
    std::vector<float> x{NAN}, y{0}, g{1}, dx{0};
    ASSERT_TRUE(GeluForward(View(x, {1}), 1, tanh, View(y, {1})).ok());
    ASSERT_TRUE(
        GeluBackward(View(g, {1}), View(x, {1}), 1, tanh, View(dx, {1})).ok());
    EXPECT_TRUE(std::isnan(y[0])) << tanh;
    EXPECT_TRUE(std::isnan(dx[0])) << tanh;
  }
}

}  // namespace
}  // namespace cpu
}  // namespace tensord

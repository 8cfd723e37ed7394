// The incomplete gamma maps (elementwise.cc over runtime/core/igamma_math.h)
// against closed forms in every regime of Note [Incomplete gamma]: P(1, x) =
// 1 - e^-x, P(1/2, x) = erf(sqrt(x)), and for integer a the Poisson sum
// Q(n, x) = e^-x sum_{k<n} x^k / k! (with a = 30 and 300 near x: the
// asymptotic expansion); SciPy's boundary values; and frexp (unary.cc).
// The sweep against PyTorch is tests/python/op_cases_math.py.
#include <cmath>
#include <cstdint>
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
std::vector<T> RunBinary(BinaryOp op, std::vector<T> a, std::vector<T> b) {
  std::vector<T> y(a.size());
  const int64_t n = static_cast<int64_t>(a.size());
  EXPECT_TRUE(Binary(op, View(a, {n}), View(b, {n}), 1.0, View(y, {n})).ok());
  return y;
}

// NaN exactly, the rest to a relative `rtol` (of at least 1).
template <typename T>
void ExpectValues(const std::vector<T>& got, const std::vector<double>& want,
                  const char* what, double rtol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << "[" << i << "]: " << got[i];
    } else {
      EXPECT_NEAR(got[i], want[i], rtol * std::max(1.0, std::abs(want[i])))
          << what << "[" << i << "]";
    }
  }
}

// Q(n, x) = e^-x sum_{k<n} x^k / k!, each term through its logarithm.
double PoissonUpper(int n, double x) {
  double q = 0;
  for (int k = 0; k < n; ++k) {
    q += std::exp(k * std::log(x) - x - std::lgamma(k + 1.0));
  }
  return q;
}

template <typename T>
void CheckClosedForms(double rtol) {
  // a = 1: the series (x <= 1), 1 - Q's continued fraction (x > 1).
  const std::vector<T> x1 = {0.25, 1, 3, 30};
  std::vector<double> p1, q1;
  for (T x : x1) {
    p1.push_back(-std::expm1(-double(x)));
    q1.push_back(std::exp(-double(x)));
  }
  ExpectValues(RunBinary(BinaryOp::kIgamma, std::vector<T>(4, 1), x1), p1,
               "igamma(1, x)", rtol);
  ExpectValues(RunBinary(BinaryOp::kIgammac, std::vector<T>(4, 1), x1), q1,
               "igammac(1, x)", rtol);
  // a = 1/2: Q's small-x series at 0.01 and 0.3, the fraction at 4.
  const std::vector<T> xh = {0.01, 0.3, 4};
  std::vector<double> ph, qh;
  for (T x : xh) {
    ph.push_back(std::erf(std::sqrt(double(x))));
    qh.push_back(std::erfc(std::sqrt(double(x))));
  }
  ExpectValues(RunBinary(BinaryOp::kIgamma, std::vector<T>(3, 0.5), xh), ph,
               "igamma(1/2, x)", rtol);
  ExpectValues(RunBinary(BinaryOp::kIgammac, std::vector<T>(3, 0.5), xh), qh,
               "igammac(1/2, x)", rtol);
}

TEST(IgammaKernelTest, ClosedFormsFloat64) { CheckClosedForms<double>(1e-13); }
TEST(IgammaKernelTest, ClosedFormsFloat32) { CheckClosedForms<float>(1e-6); }

// PyTorch's own misses these by ~3e-10 in the asymptotic regime
// (IgammaAsymptotic).
TEST(IgammaKernelTest, IntegerOrdersInEveryRegime) {
  // (a, x): the series and 1 - series (x < a), the continued fraction
  // (x > a), the asymptotic expansion for 20 < a < 200 within 30% of x and
  // for a > 200 within 4.5 sqrt(a) of it.
  const std::vector<double> a = {2, 5, 5, 30, 30, 300, 300};
  const std::vector<double> x = {0.5, 2, 9, 28, 33, 310, 290};
  std::vector<double> p, q;
  for (size_t i = 0; i < a.size(); ++i) {
    q.push_back(PoissonUpper(static_cast<int>(a[i]), x[i]));
    p.push_back(1 - q.back());
  }
  ExpectValues(RunBinary(BinaryOp::kIgamma, a, x), p, "igamma", 1e-10);
  ExpectValues(RunBinary(BinaryOp::kIgammac, a, x), q, "igammac", 1e-10);
}

TEST(IgammaKernelTest, BoundariesAsScipy) {
  const std::vector<double> a = {0, 0, 2, -1, 2, kInf, kInf, 2, kNan, kInf};
  const std::vector<double> x = {3, 0, 0, 2, -1, 5, kInf, kInf, 0, kNan};
  ExpectValues(RunBinary(BinaryOp::kIgamma, a, x),
               {1, kNan, 0, kNan, kNan, 0, kNan, 1, 0, 0}, "igamma", 0);
  ExpectValues(RunBinary(BinaryOp::kIgammac, a, x),
               {0, kNan, 1, kNan, kNan, 1, kNan, 0, 1, 1}, "igammac", 0);
  // NaN inside the domain's interior stays NaN.
  ExpectValues(RunBinary(BinaryOp::kIgamma, std::vector<double>{kNan, 2},
                         std::vector<double>{2, kNan}),
               {kNan, kNan}, "igamma of NaN", 0);
}

TEST(FrexpKernelTest, MantissaAndExponent) {
  std::vector<double> x = {0, -0.0, 1, -3.5, 0.1, 1e-310, kInf, kNan};
  std::vector<double> m(x.size());
  std::vector<int32_t> e(x.size(), 7);
  const int64_t n = static_cast<int64_t>(x.size());
  StridedView ev = View(m, {n});
  ev.data = e.data();
  ev.dtype = DType::kInt32;
  ASSERT_TRUE(Frexp(View(x, {n}), View(m, {n}), ev).ok());
  const std::vector<double> want_m = {0, -0.0, 0.5, -0.875, 0.8, 0, kInf, kNan};
  const std::vector<int32_t> want_e = {0, 0, 1, 2, -3, -1029, 0, 0};
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(e[i], want_e[i]) << "exponent " << i;
    if (i == 5) {  // a subnormal: x = m 2^e exactly
      EXPECT_EQ(std::ldexp(m[i], e[i]), x[i]);
    } else if (std::isnan(want_m[i])) {
      EXPECT_TRUE(std::isnan(m[i]));
    } else {
      EXPECT_DOUBLE_EQ(m[i], want_m[i]) << "mantissa " << i;
      EXPECT_EQ(std::signbit(m[i]), std::signbit(want_m[i])) << i;
    }
  }
  std::vector<int64_t> ints = {1}, im(1);  // floating inputs only
  EXPECT_FALSE(Frexp(View(ints, {1}), View(im, {1}), ev).ok());
}

}  // namespace
}  // namespace cpu
}  // namespace tensord

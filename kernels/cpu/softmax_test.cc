// softmax.h against a plain double softmax and its gradient formulas, for
// rows along the last dim (float32: the AVX2 rows where the CPU has them,
// with their scalar tails) and along inner dims (the column blocks), float32
// and float64; masked (-inf) and all -inf rows and NaN as PyTorch gives them.
#include "kernels/cpu/softmax.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/test_views.h"

namespace tensord {
namespace cpu {
namespace {

using testing::View;

struct Dims {
  int64_t outer, dim, inner;
  int64_t n() const { return outer * dim * inner; }
};

// softmax (or log_softmax) along dim of x in double, the textbook way.
std::vector<double> Reference(const std::vector<double>& x, Dims s, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t d) { return (o * s.dim + d) * s.inner + i; };
      double m = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t d = 0; d < s.dim; ++d) m = std::max(m, x[at(d)]);
      for (int64_t d = 0; d < s.dim; ++d) sum += std::exp(x[at(d)] - m);
      for (int64_t d = 0; d < s.dim; ++d) {
        y[at(d)] =
            log ? x[at(d)] - m - std::log(sum) : std::exp(x[at(d)] - m) / sum;
      }
    }
  }
  return y;
}

// dx from (dy, y) by the formulas of softmax.h, in double.
std::vector<double> ReferenceGrad(const std::vector<double>& dy,
                                  const std::vector<double>& y, Dims s,
                                  bool log) {
  std::vector<double> dx(y.size());
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t d) { return (o * s.dim + d) * s.inner + i; };
      double acc = 0;
      for (int64_t d = 0; d < s.dim; ++d)
        acc += log ? dy[at(d)] : dy[at(d)] * y[at(d)];
      for (int64_t d = 0; d < s.dim; ++d) {
        dx[at(d)] = log ? dy[at(d)] - std::exp(y[at(d)]) * acc
                        : y[at(d)] * (dy[at(d)] - acc);
      }
    }
  }
  return dx;
}

class SoftmaxTest : public ::testing::TestWithParam<bool> {};

// [2048, 64]: the attention shape, split over the pool; 13 and 3: tails;
// inner 9 and 20: column blocks of 8 and their remainders.
const Dims kShapes[] = {{2048, 64, 1}, {5, 13, 1},  {7, 3, 1},
                        {3, 7, 9},     {2, 64, 20}, {1, 1, 1}};

TEST_P(SoftmaxTest, ForwardAndBackwardMatchDouble) {
  const bool log = GetParam();
  std::mt19937 rng(7);
  for (const Dims& s : kShapes) {
    const int64_t n = s.n();
    std::vector<double> x = testing::Random(n, &rng, -8, 8);
    std::vector<double> dy = testing::Random(n, &rng);
    std::vector<float> xf(x.begin(), x.end()), dyf(dy.begin(), dy.end());
    for (int64_t i = 0; i < n; ++i) x[i] = xf[i], dy[i] = dyf[i];
    const std::vector<double> want = Reference(x, s, log);
    const std::vector<double> want_dx = ReferenceGrad(dy, want, s, log);
    std::vector<double> y(n), dx(n);
    std::vector<float> yf(n), dxf(n), wantf(want.begin(), want.end());
    const std::vector<int64_t> shape = {n};
    ASSERT_TRUE(
        Softmax(View(x, shape), s.outer, s.dim, s.inner, log, View(y, shape))
            .ok());
    ASSERT_TRUE(
        Softmax(View(xf, shape), s.outer, s.dim, s.inner, log, View(yf, shape))
            .ok());
    ASSERT_TRUE(SoftmaxBackward(View(dy, shape), View(y, shape), s.outer, s.dim,
                                s.inner, log, View(dx, shape))
                    .ok());
    // float32's gradient from the rounded exact output, so that it sees only
    // its own error.
    ASSERT_TRUE(SoftmaxBackward(View(dyf, shape), View(wantf, shape), s.outer,
                                s.dim, s.inner, log, View(dxf, shape))
                    .ok());
    for (int64_t i = 0; i < n; ++i) {
      const double tol = log ? 1e-5 * (1 + std::fabs(want[i])) : 1e-6;
      EXPECT_NEAR(y[i], want[i], 1e-12 * (1 + std::fabs(want[i]))) << i;
      EXPECT_NEAR(yf[i], want[i], tol) << "float32 " << s.dim << " " << i;
      EXPECT_NEAR(dx[i], want_dx[i], 1e-12) << i;
      EXPECT_NEAR(dxf[i], want_dx[i], 1e-5) << "float32 " << s.dim << " " << i;
    }
  }
}

// Rows of 19 (row path) and 19 x 2 and 19 x 9 columns (column paths: a
// block of 8 and remainders): entries 10.. are -inf, row 1 is all -inf,
// row 2 has a NaN.
template <typename T>
void CheckMasked(bool log, int64_t inner) {
  const Dims s{3, 19, inner};
  const T inf = std::numeric_limits<T>::infinity();
  std::vector<T> x(s.n()), y(s.n());
  std::mt19937 rng(3);
  std::uniform_real_distribution<T> u(-2, 2);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t d = 0; d < s.dim; ++d) {
      for (int64_t i = 0; i < inner; ++i) {
        T& v = x[(o * s.dim + d) * inner + i];
        v = o == 1 || d >= 10 ? -inf : u(rng);
        if (o == 2 && d == 4) v = std::numeric_limits<T>::quiet_NaN();
      }
    }
  }
  const std::vector<int64_t> shape = {s.n()};
  ASSERT_TRUE(
      Softmax(View(x, shape), s.outer, s.dim, inner, log, View(y, shape)).ok());
  for (int64_t i = 0; i < inner; ++i) {
    double sum = 0;
    for (int64_t d = 0; d < s.dim; ++d) {
      const T v = y[d * inner + i];
      if (d >= 10) {
        EXPECT_EQ(v, log ? -inf : T{0}) << d;
      }
      sum += log ? std::exp(static_cast<double>(v)) : v;
      EXPECT_TRUE(std::isnan(y[(s.dim + d) * inner + i])) << "all -inf " << d;
      EXPECT_TRUE(std::isnan(y[(2 * s.dim + d) * inner + i])) << "NaN " << d;
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
}

TEST_P(SoftmaxTest, MaskedRowsAsPyTorch) {
  for (int64_t inner : {1, 2, 9}) {
    CheckMasked<float>(GetParam(), inner);
    CheckMasked<double>(GetParam(), inner);
  }
}

INSTANTIATE_TEST_SUITE_P(SoftmaxAndLog, SoftmaxTest, ::testing::Bool());

}  // namespace
}  // namespace cpu
}  // namespace tensord

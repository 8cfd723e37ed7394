// batch_norm.h in float64: the forward against the textbook formula, the
// backward against central finite differences of sum(y * r) for a random r,
// on 2-d, 3-d and 4-d inputs, with and without weight and bias.
#include "kernels/cpu/batch_norm.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/test_views.h"

namespace tensord {
namespace cpu {
namespace {

using testing::Random;
using testing::View;

constexpr double kEps = 1e-5;

struct Shape3 {
  std::vector<int64_t> sizes;
  bool affine;
};

class BatchNormTest : public ::testing::TestWithParam<Shape3> {};

TEST_P(BatchNormTest, ForwardFormulaAndFiniteDifferenceGradients) {
  const std::vector<int64_t> sizes = GetParam().sizes;
  const bool affine = GetParam().affine;
  const int64_t n = sizes[0], c = sizes[1];
  int64_t s = 1;
  for (size_t i = 2; i < sizes.size(); ++i) s *= sizes[i];
  std::mt19937 rng(11);
  auto x = Random(n * c * s, &rng), r = Random(n * c * s, &rng);
  auto w = Random(c, &rng, 0.5), b = Random(c, &rng);
  StridedView none{nullptr};
  const StridedView wv = affine ? View(w, {c}) : none;
  const StridedView bv = affine ? View(b, {c}) : none;
  auto run = [&](std::vector<double>& in, std::vector<double>* mean,
                 std::vector<double>* var) {
    std::vector<double> y(in.size()), m(c), v(c);
    EXPECT_TRUE(BatchNormForward(View(in, sizes), wv, bv, kEps, View(y, sizes),
                                 View(m, {c}), View(v, {c}))
                    .ok());
    if (mean != nullptr) *mean = m, *var = v;
    return y;
  };
  std::vector<double> mean, var;
  const std::vector<double> y = run(x, &mean, &var);
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) sum += x[(i * c + ch) * s + j];
    const double mu = sum / static_cast<double>(n * s);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) {
        const double d = x[(i * c + ch) * s + j] - mu;
        sq += d * d;
      }
    const double vr = sq / static_cast<double>(n * s);
    ASSERT_NEAR(mean[ch], mu, 1e-12);
    ASSERT_NEAR(var[ch], vr, 1e-12);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) {
        const int64_t k = (i * c + ch) * s + j;
        const double want =
            (x[k] - mu) / std::sqrt(vr + kEps) * (affine ? w[ch] : 1.0) +
            (affine ? b[ch] : 0.0);
        ASSERT_NEAR(y[k], want, 1e-10) << k;
      }
  }
  std::vector<double> dx(x.size(), 7), dw(c, 7), db(c, 7);
  ASSERT_TRUE(BatchNormBackward(View(r, sizes), View(x, sizes), View(mean, {c}),
                                View(var, {c}), wv, kEps, View(dx, sizes),
                                View(dw, {c}), View(db, {c}))
                  .ok());
  auto loss = [&](std::vector<double>& in) {
    const std::vector<double> out = run(in, nullptr, nullptr);
    double l = 0;
    for (size_t i = 0; i < out.size(); ++i) l += out[i] * r[i];
    return l;
  };
  const double h = 1e-6;
  for (size_t k = 0; k < x.size(); ++k) {
    std::vector<double> p = x, m = x;
    p[k] += h, m[k] -= h;
    ASSERT_NEAR(dx[k], (loss(p) - loss(m)) / (2 * h), 1e-6) << k;
  }
  if (!affine) return;
  for (int64_t ch = 0; ch < c; ++ch) {
    for (auto [param, grad] : {std::pair{&w, &dw}, std::pair{&b, &db}}) {
      const double keep = (*param)[ch];
      (*param)[ch] = keep + h;
      const double lp = loss(x);
      (*param)[ch] = keep - h;
      const double lm = loss(x);
      (*param)[ch] = keep;
      ASSERT_NEAR((*grad)[ch], (lp - lm) / (2 * h), 1e-6) << ch;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BatchNormTest,
                         ::testing::Values(Shape3{{5, 3}, true},
                                           Shape3{{4, 3, 5}, false},
                                           Shape3{{3, 4, 3, 2}, true},
                                           Shape3{{2, 6, 4, 4}, true}));

}  // namespace
}  // namespace cpu
}  // namespace tensord

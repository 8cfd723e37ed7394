// layer_norm.h: the forward against the textbook formula in float64, the
// backward against central finite differences of sum(y * r), float32 against
// float64, and no rows.
#include "kernels/cpu/layer_norm.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/test_views.h"

namespace tensord {
namespace cpu {
namespace {

using testing::Random;
using testing::View;

constexpr double kEps = 1e-5;

struct Case {
  int64_t m, n;
  bool affine;
};

class LayerNormTest : public ::testing::TestWithParam<Case> {};

TEST_P(LayerNormTest, FormulaAndFiniteDifferences) {
  // Plain copies: C++17 lambdas cannot capture structured bindings (clang).
  const int64_t m = GetParam().m, n = GetParam().n;
  const bool affine = GetParam().affine;
  std::mt19937 rng(5);
  auto x = Random(m * n, &rng), r = Random(m * n, &rng);
  auto w = Random(n, &rng, 0.5, 1.5), b = Random(n, &rng);
  const StridedView none{nullptr};
  auto forward = [&](std::vector<double>& xs, std::vector<double>& ws,
                     std::vector<double>& bs, std::vector<double>* mean,
                     std::vector<double>* rstd) {
    std::vector<double> y(m * n), mu(m), rs(m);
    EXPECT_TRUE(LayerNormForward(View(xs, {m, n}), m, n,
                                 affine ? View(ws, {n}) : none,
                                 affine ? View(bs, {n}) : none, kEps,
                                 View(y, {m, n}), View(mu, {m}), View(rs, {m}))
                    .ok());
    if (mean != nullptr) *mean = mu, *rstd = rs;
    return y;
  };
  std::vector<double> mean, rstd;
  const std::vector<double> y = forward(x, w, b, &mean, &rstd);
  for (int64_t i = 0; i < m; ++i) {
    double s = 0, sq = 0;
    for (int64_t k = 0; k < n; ++k) s += x[i * n + k];
    const double mu = s / n;
    for (int64_t k = 0; k < n; ++k) sq += std::pow(x[i * n + k] - mu, 2);
    const double inv = 1 / std::sqrt(sq / n + kEps);
    EXPECT_NEAR(mean[i], mu, 1e-12);
    EXPECT_NEAR(rstd[i], inv, 1e-9);
    for (int64_t k = 0; k < n; ++k) {
      const double want =
          (x[i * n + k] - mu) * inv * (affine ? w[k] : 1) + (affine ? b[k] : 0);
      EXPECT_NEAR(y[i * n + k], want, 1e-10);
    }
  }
  std::vector<double> dx(m * n), dw(n), db(n);
  ASSERT_TRUE(LayerNormBackward(View(r, {m, n}), View(x, {m, n}), m, n,
                                View(mean, {m}), View(rstd, {m}),
                                affine ? View(w, {n}) : none, View(dx, {m, n}),
                                affine ? View(dw, {n}) : none,
                                affine ? View(db, {n}) : none)
                  .ok());
  auto objective = [&]() {
    const std::vector<double> yy = forward(x, w, b, nullptr, nullptr);
    double s = 0;
    for (size_t i = 0; i < yy.size(); ++i) s += yy[i] * r[i];
    return s;
  };
  auto check = [&](std::vector<double>& param, const std::vector<double>& grad,
                   const char* what) {
    for (size_t i = 0; i < param.size(); ++i) {
      const double keep = param[i], h = 1e-6;
      param[i] = keep + h;
      const double up = objective();
      param[i] = keep - h;
      const double down = objective();
      param[i] = keep;
      EXPECT_NEAR(grad[i], (up - down) / (2 * h), 1e-6) << what << " " << i;
    }
  };
  check(x, dx, "x");
  if (affine) {
    check(w, dw, "weight");
    check(b, db, "bias");
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, LayerNormTest,
                         ::testing::Values(Case{3, 5, true}, Case{4, 17, false},
                                           Case{2, 1, true}, Case{6, 9, true}));

// Float32 takes the AVX2 rows where the CPU has them (Note [CPU layer_norm]):
// row lengths with and without a tail past the 32- and 8-lane loops, weight
// and bias, weight alone, neither.
struct Float32Case {
  int64_t m, n;
  bool weight, bias;
};

class LayerNormFloat32Test : public ::testing::TestWithParam<Float32Case> {};

TEST_P(LayerNormFloat32Test, MatchesFloat64) {
  const int64_t m = GetParam().m, n = GetParam().n;
  const bool weight = GetParam().weight, bias = GetParam().bias;
  std::mt19937 rng(3);
  auto xd = Random(m * n, &rng, -3, 5), gd = Random(m * n, &rng);
  auto wd = Random(n, &rng), bd = Random(n, &rng);
  std::vector<float> xf(xd.begin(), xd.end()), gf(gd.begin(), gd.end()),
      wf(wd.begin(), wd.end()), bf(bd.begin(), bd.end());
  std::vector<double> yd(m * n), md(m), rd(m), dxd(m * n), dwd(n), dbd(n);
  std::vector<float> yf(m * n), mf(m), rf(m), dxf(m * n), dwf(n), dbf(n);
  const StridedView none{nullptr};
  auto opt = [&](auto& v, bool on) { return on ? View(v, {n}) : none; };
  ASSERT_TRUE(LayerNormForward(View(xd, {m, n}), m, n, opt(wd, weight),
                               opt(bd, bias), kEps, View(yd, {m, n}),
                               View(md, {m}), View(rd, {m}))
                  .ok());
  ASSERT_TRUE(LayerNormForward(View(xf, {m, n}), m, n, opt(wf, weight),
                               opt(bf, bias), kEps, View(yf, {m, n}),
                               View(mf, {m}), View(rf, {m}))
                  .ok());
  ASSERT_TRUE(LayerNormBackward(View(gd, {m, n}), View(xd, {m, n}), m, n,
                                View(md, {m}), View(rd, {m}), opt(wd, weight),
                                View(dxd, {m, n}), opt(dwd, weight),
                                opt(dbd, bias))
                  .ok());
  ASSERT_TRUE(LayerNormBackward(View(gf, {m, n}), View(xf, {m, n}), m, n,
                                View(mf, {m}), View(rf, {m}), opt(wf, weight),
                                View(dxf, {m, n}), opt(dwf, weight),
                                opt(dbf, bias))
                  .ok());
  // The forward against the textbook formula (not the float64 kernel, which
  // shares the portable rows), the backward against the float64 kernel
  // (checked by finite differences above).
  for (int64_t i = 0; i < m; ++i) {
    double sum = 0, sq = 0;
    for (int64_t k = 0; k < n; ++k) sum += xd[i * n + k];
    const double mu = sum / n;
    for (int64_t k = 0; k < n; ++k) sq += std::pow(xd[i * n + k] - mu, 2);
    const double inv = 1 / std::sqrt(sq / n + kEps);
    ASSERT_NEAR(mf[i], mu, 1e-5 * (1 + std::abs(mu))) << i;
    ASSERT_NEAR(rf[i], inv, 1e-5 * (1 + std::abs(inv))) << i;
    for (int64_t k = 0; k < n; ++k) {
      const double want = (xd[i * n + k] - mu) * inv * (weight ? wd[k] : 1) +
                          (bias ? bd[k] : 0);
      ASSERT_NEAR(yf[i * n + k], want, 1e-5 * (1 + std::abs(want))) << i;
    }
  }
  for (int64_t i = 0; i < m * n; ++i) {
    ASSERT_NEAR(dxf[i], dxd[i], 1e-4 * (1 + std::abs(dxd[i]))) << i;
  }
  for (int64_t k = 0; k < n; ++k) {
    if (weight) ASSERT_NEAR(dwf[k], dwd[k], 1e-4 * (1 + std::abs(dwd[k]))) << k;
    if (bias) ASSERT_NEAR(dbf[k], dbd[k], 1e-4 * (1 + std::abs(dbd[k]))) << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, LayerNormFloat32Test,
                         ::testing::Values(Float32Case{64, 768, true, true},
                                           Float32Case{512, 128, true, true},
                                           Float32Case{9, 45, true, true},
                                           Float32Case{7, 3, true, true},
                                           Float32Case{5, 77, true, false},
                                           Float32Case{6, 40, false, false}));

TEST(LayerNorm, NoRowsGiveZeroParameterGradients) {
  std::vector<double> empty, dw(4, 7.0), db(4, 7.0), w(4, 1.0);
  const StridedView e = View(empty, {0, 4});
  ASSERT_TRUE(LayerNormBackward(e, e, 0, 4, View(empty, {0}), View(empty, {0}),
                                View(w, {4}), e, View(dw, {4}), View(db, {4}))
                  .ok());
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(dw[k], 0);
    EXPECT_EQ(db[k], 0);
  }
}

}  // namespace
}  // namespace cpu
}  // namespace tensord

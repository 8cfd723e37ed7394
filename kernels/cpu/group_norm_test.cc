// group_norm.h: hand-worked values (eps 0: the statistics exact), the
// backward against central finite differences of sum(y * r) in float64,
// float32 (the AVX2 items) against float64, and an empty batch.
#include "kernels/cpu/group_norm.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/test_views.h"

namespace tensord {
namespace cpu {
namespace {

using testing::Random;
using testing::View;

const StridedView kNone{nullptr};

// Two groups of one channel: x [1, 2, 2] = [[0, 2], [5, 9]] has means 1 and
// 7, variances 1 and 4, so rstd 1 and 0.5 and xhat [[-1, 1], [-1, 1]]; with
// weight [2, 3] and bias [1, -1], y = [[-1, 3], [-4, 2]].
TEST(GroupNorm, HandWorkedForwardTwoGroups) {
  std::vector<double> x = {0, 2, 5, 9}, w = {2, 3}, b = {1, -1};
  std::vector<double> y(4), mean(2), rstd(2);
  ASSERT_TRUE(GroupNormForward(View(x, {1, 2, 2}), {1, 2, 2, 2}, View(w, {2}),
                               View(b, {2}), 0.0, View(y, {1, 2, 2}),
                               View(mean, {1, 2}), View(rstd, {1, 2}))
                  .ok());
  EXPECT_EQ(mean, (std::vector<double>{1, 7}));
  EXPECT_EQ(rstd, (std::vector<double>{1, 0.5}));
  EXPECT_EQ(y, (std::vector<double>{-1, 3, -4, 2}));
}

// One group of two channels: x [[0, 2], [0, 2]] has mean 1, rstd 1, xhat
// [-1, 1, -1, 1], y = [[-1, 3], [-4, 2]] with weight [2, 3] and bias
// [1, -1]. With dy [[1, 0], [0, 2]]:
// g = dy * w = [2, 0, 0, 6], mean(g) = 2, mean(g * xhat) = 1, so dx = rstd *
// (g - 2 - xhat * 1) = [1, -3, -1, 3]; dweight = sum dy * xhat per channel =
// [-1, 2]; dbias = sum dy = [1, 2].
TEST(GroupNorm, HandWorkedBackwardOneGroup) {
  std::vector<double> x = {0, 2, 0, 2}, w = {2, 3}, b = {1, -1};
  std::vector<double> y(4), mean(1), rstd(1);
  ASSERT_TRUE(GroupNormForward(View(x, {1, 2, 2}), {1, 2, 2, 1}, View(w, {2}),
                               View(b, {2}), 0.0, View(y, {1, 2, 2}),
                               View(mean, {1, 1}), View(rstd, {1, 1}))
                  .ok());
  EXPECT_EQ(y, (std::vector<double>{-1, 3, -4, 2}));
  std::vector<double> dy = {1, 0, 0, 2}, dx(4), dw(2), db(2);
  ASSERT_TRUE(GroupNormBackward(View(dy, {1, 2, 2}), View(x, {1, 2, 2}),
                                {1, 2, 2, 1}, View(mean, {1, 1}),
                                View(rstd, {1, 1}), View(w, {2}),
                                View(dx, {1, 2, 2}), View(dw, {2}),
                                View(db, {2}))
                  .ok());
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(dx[i], (std::vector<double>{1, -3, -1, 3})[i], 1e-14) << i;
  }
  EXPECT_EQ(dw, (std::vector<double>{-1, 2}));
  EXPECT_EQ(db, (std::vector<double>{1, 2}));
}

struct Case {
  int64_t n, c, hw, groups;
  bool affine;
};

class GroupNormTest : public ::testing::TestWithParam<Case> {};

TEST_P(GroupNormTest, FiniteDifferences) {
  const Case p = GetParam();
  const GroupNormShape s{p.n, p.c, p.hw, p.groups};
  const int64_t size = p.n * p.c * p.hw;
  std::mt19937 rng(5);
  auto x = Random(size, &rng, -2, 3), r = Random(size, &rng);
  auto w = Random(p.c, &rng, 0.5, 1.5), b = Random(p.c, &rng);
  const double eps = 1e-5;
  auto forward = [&](std::vector<double>* mean, std::vector<double>* rstd) {
    std::vector<double> y(size), mu(p.n * p.groups), rs(p.n * p.groups);
    EXPECT_TRUE(GroupNormForward(View(x, {size}), s,
                                 p.affine ? View(w, {p.c}) : kNone,
                                 p.affine ? View(b, {p.c}) : kNone, eps,
                                 View(y, {size}), View(mu, {p.n * p.groups}),
                                 View(rs, {p.n * p.groups}))
                    .ok());
    if (mean != nullptr) *mean = mu, *rstd = rs;
    return y;
  };
  std::vector<double> mean, rstd;
  forward(&mean, &rstd);
  std::vector<double> dx(size), dw(p.c), db(p.c);
  const int64_t stats = p.n * p.groups;
  ASSERT_TRUE(GroupNormBackward(View(r, {size}), View(x, {size}), s,
                                View(mean, {stats}), View(rstd, {stats}),
                                p.affine ? View(w, {p.c}) : kNone,
                                View(dx, {size}), View(dw, {p.c}),
                                View(db, {p.c}))
                  .ok());
  auto objective = [&]() {
    const std::vector<double> y = forward(nullptr, nullptr);
    double sum = 0;
    for (int64_t i = 0; i < size; ++i) sum += y[i] * r[i];
    return sum;
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
  if (p.affine) {
    check(w, dw, "weight");
    check(b, db, "bias");
  }
}

// Odd HxW, one group, C == groups, a group longer than the 32 lanes.
INSTANTIATE_TEST_SUITE_P(Shapes, GroupNormTest,
                         ::testing::Values(Case{2, 4, 5, 2, true},
                                           Case{3, 3, 7, 1, true},
                                           Case{2, 6, 3, 6, false},
                                           Case{2, 4, 19, 2, true}));

// Float32 takes the AVX2 items where the CPU has them: against the float64
// kernel (checked above), at ResNet's geometry (a pool split) and at small
// odd ones.
class GroupNormFloat32Test : public ::testing::TestWithParam<Case> {};

TEST_P(GroupNormFloat32Test, MatchesFloat64) {
  const Case p = GetParam();
  const GroupNormShape s{p.n, p.c, p.hw, p.groups};
  const int64_t size = p.n * p.c * p.hw, stats = p.n * p.groups;
  std::mt19937 rng(3);
  auto xd = Random(size, &rng, -3, 5), gd = Random(size, &rng);
  auto wd = Random(p.c, &rng), bd = Random(p.c, &rng);
  std::vector<float> xf(xd.begin(), xd.end()), gf(gd.begin(), gd.end()),
      wf(wd.begin(), wd.end()), bf(bd.begin(), bd.end());
  auto run = [&](auto& x, auto& g, auto& w, auto& b, auto* y, auto* dx,
                 auto* dw, auto* db) {
    using V = std::remove_reference_t<decltype(x)>;
    V mean(stats), rstd(stats);
    y->resize(size), dx->resize(size), dw->resize(p.c), db->resize(p.c);
    auto opt = [&](V& v) { return p.affine ? View(v, {p.c}) : kNone; };
    ASSERT_TRUE(GroupNormForward(View(x, {size}), s, opt(w), opt(b), 1e-5,
                                 View(*y, {size}), View(mean, {stats}),
                                 View(rstd, {stats}))
                    .ok());
    ASSERT_TRUE(GroupNormBackward(View(g, {size}), View(x, {size}), s,
                                  View(mean, {stats}), View(rstd, {stats}),
                                  opt(w), View(*dx, {size}), View(*dw, {p.c}),
                                  View(*db, {p.c}))
                    .ok());
  };
  std::vector<double> yd, dxd, dwd, dbd;
  std::vector<float> yf, dxf, dwf, dbf;
  run(xd, gd, wd, bd, &yd, &dxd, &dwd, &dbd);
  run(xf, gf, wf, bf, &yf, &dxf, &dwf, &dbf);
  for (int64_t i = 0; i < size; ++i) {
    ASSERT_NEAR(yf[i], yd[i], 1e-5 * (1 + std::abs(yd[i]))) << i;
    ASSERT_NEAR(dxf[i], dxd[i], 1e-4 * (1 + std::abs(dxd[i]))) << i;
  }
  for (int64_t k = 0; k < p.c; ++k) {
    ASSERT_NEAR(dwf[k], dwd[k], 1e-4 * (1 + std::abs(dwd[k]))) << k;
    ASSERT_NEAR(dbf[k], dbd[k], 1e-4 * (1 + std::abs(dbd[k]))) << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GroupNormFloat32Test,
                         ::testing::Values(Case{32, 64, 784, 8, true},
                                           Case{3, 6, 9, 3, true},
                                           Case{2, 5, 33, 5, false},
                                           Case{1, 4, 1, 1, true}));

TEST(GroupNorm, EmptyBatchGivesZeroParameterGradients) {
  std::vector<double> empty, dw(4, 7.0), db(4, 7.0), w(4, 1.0);
  const StridedView e = View(empty, {0});
  ASSERT_TRUE(GroupNormBackward(e, e, {0, 4, 3, 2}, e, e, View(w, {4}), e,
                                View(dw, {4}), View(db, {4}))
                  .ok());
  EXPECT_EQ(dw, std::vector<double>(4, 0.0));
  EXPECT_EQ(db, std::vector<double>(4, 0.0));
}

}  // namespace
}  // namespace cpu
}  // namespace tensord

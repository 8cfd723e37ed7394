// onednn_conv.h against direct loops over every tap (in double), on float32
// geometries with stride, padding, dilation and groups, some large enough to
// split the batch over the pool (4 threads, BUILD) into blocks of unequal
// size; and the same result on a second run (no timing in the weight
// gradient's block sums).
#include "kernels/cpu/onednn_conv.h"

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

struct Case {
  int64_t n, c, h, w, o, groups, kh, kw, sh, sw, ph, pw, dh, dw;
};

// |got - want| within a float32 sum's rounding over `terms` products of
// values in [-1, 1].
void ExpectClose(const std::vector<float>& got, const std::vector<double>& want,
                 int64_t terms, const char* what) {
  const double tol = 1e-6 * static_cast<double>(terms) + 1e-5;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol) << what << " " << i;
  }
}

class OnednnConvTest : public ::testing::TestWithParam<Case> {};

TEST_P(OnednnConvTest, ForwardAndGradientsMatchDirectLoops) {
  const Case t = GetParam();
  ConvGeometry g{t.n, t.c, t.h, t.w, t.o, t.groups, {}};
  const int64_t oh = (t.h + 2 * t.ph - t.dh * (t.kh - 1) - 1) / t.sh + 1,
                ow = (t.w + 2 * t.pw - t.dw * (t.kw - 1) - 1) / t.sw + 1;
  g.win = {t.kh, t.kw, t.sh, t.sw, t.ph, t.pw, t.dh, t.dw, oh, ow};
  ASSERT_TRUE(OnednnConvApplies(DType::kFloat32, g));
  EXPECT_FALSE(OnednnConvApplies(DType::kFloat64, g));
  const int64_t cg = t.c / t.groups, og = t.o / t.groups;
  std::mt19937 rng(7);
  auto x = Random<float>(t.n * t.c * t.h * t.w, &rng);
  auto wt = Random<float>(t.o * cg * t.kh * t.kw, &rng);
  auto gy = Random<float>(t.n * t.o * oh * ow, &rng);
  std::vector<double> want_y(gy.size()), want_gi(x.size()), want_gw(wt.size());
  for (int64_t n = 0; n < t.n; ++n)
    for (int64_t oc = 0; oc < t.o; ++oc)
      for (int64_t cl = 0; cl < cg; ++cl)
        for (int64_t a = 0; a < t.kh; ++a)
          for (int64_t b = 0; b < t.kw; ++b)
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j) {
                const int64_t r = i * t.sh - t.ph + a * t.dh,
                              q = j * t.sw - t.pw + b * t.dw;
                if (r < 0 || r >= t.h || q < 0 || q >= t.w) continue;
                const int64_t c = oc / og * cg + cl;
                const int64_t xi = ((n * t.c + c) * t.h + r) * t.w + q;
                const int64_t wi = ((oc * cg + cl) * t.kh + a) * t.kw + b;
                const int64_t yi = ((n * t.o + oc) * oh + i) * ow + j;
                want_y[yi] += double{x[xi]} * wt[wi];
                want_gi[xi] += double{gy[yi]} * wt[wi];
                want_gw[wi] += double{gy[yi]} * x[xi];
              }
  const auto xv = View(x, {t.n, t.c, t.h, t.w});
  const auto wv = View(wt, {t.o, cg, t.kh, t.kw});
  const auto gyv = View(gy, {t.n, t.o, oh, ow});
  std::vector<float> y(gy.size(), 9), gi(x.size(), 9), gw(wt.size(), 9);
  ASSERT_TRUE(OnednnConv2d(xv, wv, g, View(y, {t.n, t.o, oh, ow})).ok());
  ExpectClose(y, want_y, cg * t.kh * t.kw, "output");
  ASSERT_TRUE(
      OnednnConv2dBackwardInput(gyv, wv, g, View(gi, {t.n, t.c, t.h, t.w}))
          .ok());
  ExpectClose(gi, want_gi, og * t.kh * t.kw, "input gradient");
  const int64_t ws_size = OnednnConvGradWorkspace(g);
  std::vector<float> ws(ws_size);
  if (ws_size > 1) {  // too small a workspace is an error, not a stray write
    std::vector<float> small(ws_size - 1);
    EXPECT_FALSE(OnednnConv2dBackwardWeight(gyv, xv, g,
                                            View(small, {ws_size - 1}),
                                            View(gw, {t.o, cg, t.kh, t.kw}))
                     .ok());
  }
  ASSERT_TRUE(OnednnConv2dBackwardWeight(gyv, xv, g, View(ws, {ws_size}),
                                         View(gw, {t.o, cg, t.kh, t.kw}))
                  .ok());
  ExpectClose(gw, want_gw, t.n * oh * ow, "weight gradient");
  std::vector<float> gw2(wt.size(), 5);
  ASSERT_TRUE(OnednnConv2dBackwardWeight(gyv, xv, g, View(ws, {ws_size}),
                                         View(gw2, {t.o, cg, t.kh, t.kw}))
                  .ok());
  EXPECT_EQ(gw, gw2);
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, OnednnConvTest,
    ::testing::Values(Case{2, 3, 8, 8, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1},
                      Case{3, 4, 7, 9, 6, 2, 3, 2, 2, 1, 1, 0, 1, 2},
                      Case{2, 6, 9, 6, 6, 3, 2, 3, 1, 3, 2, 1, 2, 1},
                      Case{3, 4, 5, 5, 8, 4, 1, 1, 1, 1, 0, 0, 1, 1},
                      Case{1, 2, 4, 4, 2, 1, 4, 4, 2, 2, 0, 0, 1, 1},
                      Case{5, 1, 6, 5, 3, 1, 3, 3, 3, 2, 1, 1, 1, 1},
                      // Split over the pool: 7 images in blocks of 1, 2, 2, 2.
                      Case{7, 8, 14, 14, 16, 1, 3, 3, 1, 1, 1, 1, 1, 1},
                      Case{5, 8, 12, 10, 12, 2, 3, 3, 1, 1, 2, 1, 2, 1},
                      Case{6, 32, 16, 16, 24, 1, 1, 1, 2, 2, 0, 0, 1, 1},
                      Case{9, 16, 16, 16, 32, 1, 3, 3, 2, 2, 1, 1, 1, 1}));

}  // namespace
}  // namespace cpu
}  // namespace tensord

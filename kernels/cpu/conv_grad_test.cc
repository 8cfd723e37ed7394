// conv_grad.h against direct loops over every tap, on geometries with
// stride, padding, dilation and groups, and with workspaces small enough to
// force several image blocks.
#include "kernels/cpu/conv_grad.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace tensord {
namespace cpu {
namespace {

StridedView View(std::vector<double>& v, std::vector<int64_t> sizes) {
  StridedView s;
  s.data = v.data();
  s.dtype = DType::kFloat64;
  s.ndim = static_cast<int>(sizes.size());
  int64_t stride = 1;
  for (int i = s.ndim - 1; i >= 0; --i) {
    s.sizes[i] = sizes[i], s.strides[i] = stride;
    stride *= sizes[i];
  }
  return s;
}

std::vector<double> Random(int64_t n, std::mt19937* rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = u(*rng);
  return v;
}

struct Case {
  int64_t n, c, h, w, o, groups, kh, kw, sh, sw, ph, pw, dh, dw;
};

class ConvGradTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConvGradTest, MatchesDirectLoops) {
  const Case t = GetParam();
  ConvGeometry g{t.n, t.c, t.h, t.w, t.o, t.groups, {}};
  const int64_t oh = (t.h + 2 * t.ph - t.dh * (t.kh - 1) - 1) / t.sh + 1,
                ow = (t.w + 2 * t.pw - t.dw * (t.kw - 1) - 1) / t.sw + 1;
  g.win = {t.kh, t.kw, t.sh, t.sw, t.ph, t.pw, t.dh, t.dw, oh, ow};
  const int64_t cg = t.c / t.groups, og = t.o / t.groups;
  std::mt19937 rng(7);
  auto x = Random(t.n * t.c * t.h * t.w, &rng);
  auto wt = Random(t.o * cg * t.kh * t.kw, &rng);
  auto gy = Random(t.n * t.o * oh * ow, &rng);
  std::vector<double> want_gi(x.size()), want_gw(wt.size());
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
                const double gv = gy[((n * t.o + oc) * oh + i) * ow + j];
                want_gi[xi] += gv * wt[wi];
                want_gw[wi] += gv * x[xi];
              }
  const int64_t one_image = (t.c * t.kh * t.kw + t.o) * oh * ow;
  for (int64_t ws_size : {ConvGradWorkspace(g), one_image, 2 * one_image}) {
    SCOPED_TRACE(ws_size);
    std::vector<double> ws(ws_size), gi(x.size(), 9), gw(wt.size(), 9);
    const auto gyv = View(gy, {t.n, t.o, oh, ow});
    ASSERT_TRUE(Conv2dBackwardInput(gyv, View(wt, {t.o, cg, t.kh, t.kw}), g,
                                    View(ws, {ws_size}),
                                    View(gi, {t.n, t.c, t.h, t.w}))
                    .ok());
    ASSERT_TRUE(Conv2dBackwardWeight(gyv, View(x, {t.n, t.c, t.h, t.w}), g,
                                     View(ws, {ws_size}),
                                     View(gw, {t.o, cg, t.kh, t.kw}))
                    .ok());
    for (size_t i = 0; i < gi.size(); ++i)
      ASSERT_NEAR(gi[i], want_gi[i], 1e-9) << i;
    for (size_t i = 0; i < gw.size(); ++i)
      ASSERT_NEAR(gw[i], want_gw[i], 1e-9) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, ConvGradTest,
    ::testing::Values(Case{2, 3, 8, 8, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1},
                      Case{3, 4, 7, 9, 6, 2, 3, 2, 2, 1, 1, 0, 1, 2},
                      Case{2, 6, 9, 6, 6, 3, 2, 3, 1, 3, 2, 1, 2, 1},
                      Case{3, 4, 5, 5, 8, 4, 1, 1, 1, 1, 0, 0, 1, 1},
                      Case{1, 2, 4, 4, 2, 1, 4, 4, 2, 2, 0, 0, 1, 1},
                      Case{5, 1, 6, 5, 3, 1, 3, 3, 3, 2, 1, 1, 1, 1}));

TEST(PoolGradTest, MaxGoesToTheLastNaNElseFirstMaximum) {
  std::vector<double> x = {1, 3, 3, 0,  //
                           2, 0, 0, 3};
  std::vector<double> g = {10, 20}, gi(8, 5);
  const Window2d w{2, 2, 2, 2, 0, 0, 1, 1, 1, 2};
  ASSERT_TRUE(MaxPool2dBackward(View(g, {1, 1, 1, 2}), View(x, {1, 1, 2, 4}), w,
                                View(gi, {1, 1, 2, 4}))
                  .ok());
  EXPECT_EQ(gi, (std::vector<double>{0, 10, 20, 0, 0, 0, 0, 0}));
  x[4] = x[5] = std::nan("");
  ASSERT_TRUE(MaxPool2dBackward(View(g, {1, 1, 1, 2}), View(x, {1, 1, 2, 4}), w,
                                View(gi, {1, 1, 2, 4}))
                  .ok());
  EXPECT_EQ(gi, (std::vector<double>{0, 0, 20, 0, 0, 10, 0, 0}));
}

}  // namespace
}  // namespace cpu
}  // namespace tensord

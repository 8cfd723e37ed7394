// conv.h and conv_grad.h against direct loops over every tap, on geometries
// with stride, padding, dilation and groups, some large enough to split over
// the pool (4 threads, BUILD), and with workspaces small enough to take one
// image at a time.
#include "kernels/cpu/conv.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/conv_grad.h"
#include "kernels/cpu/test_views.h"

namespace tensord {
namespace cpu {
namespace {

using testing::Random;
using testing::View;

struct Case {
  int64_t n, c, h, w, o, groups, kh, kw, sh, sw, ph, pw, dh, dw;
};

class ConvTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConvTest, ForwardAndGradientsMatchDirectLoops) {
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
                want_y[yi] += x[xi] * wt[wi];
                const double gv = gy[yi];
                want_gi[xi] += gv * wt[wi];
                want_gw[wi] += gv * x[xi];
              }
  const auto xv = View(x, {t.n, t.c, t.h, t.w});
  const auto wv = View(wt, {t.o, cg, t.kh, t.kw});
  const int64_t columns = cg * t.kh * t.kw * oh * ow;
  for (int64_t ws_size : {ConvWorkspace(g), columns}) {
    SCOPED_TRACE(ws_size);
    std::vector<double> ws(ws_size), y(gy.size(), 9);
    ASSERT_TRUE(
        Conv2d(xv, wv, g, View(ws, {ws_size}), View(y, {t.n, t.o, oh, ow}))
            .ok());
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], want_y[i], 1e-9) << i;
  }
  // One thread's scratch (images in turn), two (still in turn: 4 threads),
  // and a slot per thread (images over the pool).
  const int64_t slot = t.c * t.kh * t.kw * oh * ow + t.o * cg * t.kh * t.kw;
  ASSERT_EQ(ConvGradWorkspace(g), 4 * slot);
  {
    std::vector<double> small(slot - 1), gi(x.size());
    EXPECT_FALSE(Conv2dBackwardInput(View(gy, {t.n, t.o, oh, ow}),
                                     View(wt, {t.o, cg, t.kh, t.kw}), g,
                                     View(small, {slot - 1}),
                                     View(gi, {t.n, t.c, t.h, t.w}))
                     .ok());
  }
  for (int64_t ws_size : {slot, 2 * slot, 4 * slot}) {
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
    Geometries, ConvTest,
    ::testing::Values(Case{2, 3, 8, 8, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1},
                      Case{3, 4, 7, 9, 6, 2, 3, 2, 2, 1, 1, 0, 1, 2},
                      Case{2, 6, 9, 6, 6, 3, 2, 3, 1, 3, 2, 1, 2, 1},
                      Case{3, 4, 5, 5, 8, 4, 1, 1, 1, 1, 0, 0, 1, 1},
                      Case{1, 2, 4, 4, 2, 1, 4, 4, 2, 2, 0, 0, 1, 1},
                      Case{5, 1, 6, 5, 3, 1, 3, 3, 3, 2, 1, 1, 1, 1},
                      // Split over the pool (forward: by image; GEMMs).
                      Case{7, 8, 14, 14, 16, 1, 3, 3, 1, 1, 1, 1, 1, 1},
                      Case{5, 8, 12, 10, 12, 2, 3, 3, 1, 1, 2, 1, 2, 1},
                      Case{6, 32, 16, 16, 24, 1, 1, 1, 1, 1, 0, 0, 1, 1},
                      Case{1, 16, 20, 20, 32, 1, 3, 3, 1, 1, 1, 1, 1, 1}));

TEST(PoolGradTest, MaxGoesToTheLastNaNElseFirstMaximum) {
  std::vector<double> x = {1, 3, 3, 0,  //
                           2, 0, 0, 3};
  std::vector<double> g = {10, 20}, gi(8, 5);
  const Window2d w{2, 2, 2, 2, 0, 0, 1, 1, 1, 2};
  ASSERT_TRUE(MaxPool2dBackward(View(g, {1, 1, 1, 2}), View(x, {1, 1, 2, 4}),
                                StridedView{}, w, View(gi, {1, 1, 2, 4}))
                  .ok());
  EXPECT_EQ(gi, (std::vector<double>{0, 10, 20, 0, 0, 0, 0, 0}));
  x[4] = x[5] = std::nan("");
  ASSERT_TRUE(MaxPool2dBackward(View(g, {1, 1, 1, 2}), View(x, {1, 1, 2, 4}),
                                StridedView{}, w, View(gi, {1, 1, 2, 4}))
                  .ok());
  EXPECT_EQ(gi, (std::vector<double>{0, 0, 20, 0, 0, 10, 0, 0}));
}

// Against PyTorch's rule written as a loop over each window's taps in order
// (a tap wins when greater than the best so far or NaN), on data with ties
// (values from a small set) and NaNs, for disjoint windows and overlapping,
// padded, dilated and ceil-mode ones.
TEST(PoolGradTest, MaxMatchesTheTapLoopOnTiesAndNaNs) {
  struct Geo {
    int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
  };
  const Geo geos[] = {
      {8, 6, 2, 2, 2, 2, 0, 0, 1, 1, 4, 3},  // disjoint, covers all
      {7, 9, 2, 3, 2, 3, 0, 0, 1, 1, 3, 3},  // disjoint, leftover edge
      {7, 7, 3, 3, 2, 2, 1, 1, 1, 1, 4, 4},  // overlapping, padded
      {9, 8, 2, 2, 2, 2, 0, 0, 2, 1, 4, 4},  // dilated
      {5, 5, 2, 2, 2, 2, 0, 0, 1, 1, 3, 3},  // ceil mode: partial window
  };
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> pick(0, 9);
  for (const Geo& t : geos) {
    SCOPED_TRACE(::testing::Message() << t.h << "x" << t.w << " k" << t.kh
                                      << "x" << t.kw << " s" << t.sh);
    const int64_t planes = 6;
    std::vector<double> x(planes * t.h * t.w), g(planes * t.oh * t.ow);
    for (double& v : x) {
      const int r = pick(rng);
      v = r == 0 ? std::nan("") : static_cast<double>(r % 4);
    }
    for (size_t i = 0; i < g.size(); ++i) g[i] = 1.0 + static_cast<double>(i);
    std::vector<double> want(x.size(), 0), gi(x.size(), 7);
    for (int64_t p = 0; p < planes; ++p) {
      for (int64_t i = 0; i < t.oh; ++i) {
        for (int64_t j = 0; j < t.ow; ++j) {
          double best = -INFINITY;
          int64_t arg = -1;
          for (int64_t a = 0; a < t.kh; ++a) {
            for (int64_t k = 0; k < t.kw; ++k) {
              const int64_t r = i * t.sh - t.ph + a * t.dh,
                            q = j * t.sw - t.pw + k * t.dw;
              if (r < 0 || r >= t.h || q < 0 || q >= t.w) continue;
              const double v = x[(p * t.h + r) * t.w + q];
              if (arg < 0 || v > best || std::isnan(v)) {
                best = v, arg = (p * t.h + r) * t.w + q;
              }
            }
          }
          want[arg] += g[(p * t.oh + i) * t.ow + j];
        }
      }
    }
    const Window2d w{t.kh, t.kw, t.sh, t.sw, t.ph,
                     t.pw, t.dh, t.dw, t.oh, t.ow};
    ASSERT_TRUE(MaxPool2dBackward(View(g, {2, 3, t.oh, t.ow}),
                                  View(x, {2, 3, t.h, t.w}), StridedView{}, w,
                                  View(gi, {2, 3, t.h, t.w}))
                    .ok());
    EXPECT_EQ(gi, want);
    // Given the forward's output, the maxima are not recomputed: the same
    // gradient.
    std::vector<double> y(g.size()), gi_y(x.size(), 7);
    ASSERT_TRUE(
        MaxPool2d(View(x, {2, 3, t.h, t.w}), w, View(y, {2, 3, t.oh, t.ow}))
            .ok());
    ASSERT_TRUE(MaxPool2dBackward(View(g, {2, 3, t.oh, t.ow}),
                                  View(x, {2, 3, t.h, t.w}),
                                  View(y, {2, 3, t.oh, t.ow}), w,
                                  View(gi_y, {2, 3, t.h, t.w}))
                    .ok());
    EXPECT_EQ(gi_y, want);
  }
}

}  // namespace
}  // namespace cpu
}  // namespace tensord

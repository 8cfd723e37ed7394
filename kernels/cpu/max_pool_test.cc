// max_pool.h: hand-computed windows (ties, NaN, padding, all -inf, a window
// wholly in the padding), then PyTorch's rule written as a loop over each
// window's taps (Note [Max pool indices]) on data with ties and NaNs for
// disjoint, overlapping, padded, dilated and ceil-mode windows, some large
// enough to split over the pool (4 threads, BUILD); the backward against
// max_pool2d_backward's kernel, which sends the gradient by the same rule.
#include "kernels/cpu/max_pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/conv_grad.h"
#include "kernels/cpu/test_views.h"

namespace tensord {
namespace cpu {
namespace {

using testing::View;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Pooled {
  std::vector<double> values;
  std::vector<int64_t> indices;
};

// One [1, 1, h, wd] image pooled with `w`.
Pooled Pool(std::vector<double> x, int64_t h, int64_t wd, const Window2d& w) {
  Pooled r{std::vector<double>(w.oh * w.ow, 7),
           std::vector<int64_t>(w.oh * w.ow, -7)};
  EXPECT_TRUE(MaxPool2dWithIndices(View(x, {1, 1, h, wd}), w,
                                   View(r.values, {1, 1, w.oh, w.ow}),
                                   View(r.indices, {1, 1, w.oh, w.ow}))
                  .ok());
  return r;
}

TEST(MaxPoolIndicesTest, TiesGoToTheFirstMaximumNaNToTheLastNaN) {
  std::vector<double> x = {1, 3, 3, 0,  //
                           2, 0, 0, 3};
  const Window2d w{2, 2, 2, 2, 0, 0, 1, 1, 1, 2};  // k 2, stride 2
  Pooled r = Pool(x, 2, 4, w);
  EXPECT_EQ(r.values, (std::vector<double>{3, 3}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{1, 2}));
  x[4] = x[5] = std::nan("");
  r = Pool(x, 2, 4, w);
  EXPECT_TRUE(std::isnan(r.values[0]));
  EXPECT_EQ(r.values[1], 3);
  EXPECT_EQ(r.indices, (std::vector<int64_t>{5, 2}));
}

TEST(MaxPoolIndicesTest, PaddingNeverWins) {
  const std::vector<double> x = {-5, -4, -3,  //
                                 -2, -9, -6,  //
                                 -7, -8, -1};
  const Window2d w{3, 3, 2, 2, 1, 1, 1, 1, 2, 2};  // k 3, stride 2, pad 1
  const Pooled r = Pool(x, 3, 3, w);
  EXPECT_EQ(r.values, (std::vector<double>{-2, -3, -2, -1}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{3, 2, 3, 8}));
}

TEST(MaxPoolIndicesTest, CeilModeAndDilation) {
  // 3 x 5, k 2, stride 2, ceil mode: the last window column holds column 4
  // only, the last window row row 2 only.
  std::vector<double> x = {0, 1, 2, 3, 4,  //
                           9, 8, 7, 6, 5,  //
                           1, 1, 1, 1, 1};
  Pooled r = Pool(x, 3, 5, Window2d{2, 2, 2, 2, 0, 0, 1, 1, 2, 3});
  EXPECT_EQ(r.values, (std::vector<double>{9, 7, 5, 1, 1, 1}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{5, 7, 9, 10, 12, 14}));
  // k 2, dilation 2, stride 1 on 3 x 5: taps (r, c), (r, c+2), (r+2, c), ...
  r = Pool(x, 3, 5, Window2d{2, 2, 1, 1, 0, 0, 2, 2, 1, 3});
  EXPECT_EQ(r.values, (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{2, 3, 4}));
}

TEST(MaxPoolIndicesTest, AnAllMinusInfWindowKeepsItsFirstTap) {
  const std::vector<double> x(2 * 4, -kInf);
  // k 3, stride 2, pad 1: the windows start at columns -1 and 1, row -1.
  const Pooled r = Pool(x, 2, 4, Window2d{3, 3, 2, 2, 1, 1, 1, 1, 1, 2});
  EXPECT_EQ(r.values, (std::vector<double>{-kInf, -kInf}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{0, 1}));
}

TEST(MaxPoolIndicesTest, AWindowWhollyInThePaddingPointsPastThePlane) {
  // H 2, W 1, kernel rows 2 dilated by 3, pad 1: the window's rows are -1
  // and 2, both outside; its start, -1 stepped by 3, is row 2 (PyTorch's).
  const Pooled r = Pool({5, 6}, 2, 1, Window2d{2, 1, 1, 1, 1, 0, 3, 1, 1, 1});
  EXPECT_EQ(r.values, (std::vector<double>{-kInf}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{2}));
}

TEST(MaxPoolIndicesTest, BackwardAddsAtTheIndicesAndSkipsOutsideThePlane) {
  // Two images of 2 x 3; image 1's indices include -1 and 6 (outside).
  std::vector<double> g = {1, 2, 4, 8, 16, 32, 64, 128};
  std::vector<int64_t> at = {4, 4, 0, 5, -1, 2, 6, 2};
  std::vector<double> gi(12, 9);
  ASSERT_TRUE(MaxPool2dWithIndicesBackward(View(g, {2, 1, 2, 2}),
                                           View(at, {2, 1, 2, 2}),
                                           View(gi, {2, 1, 2, 3}))
                  .ok());
  EXPECT_EQ(gi, (std::vector<double>{4, 0, 0, 0, 3, 8,  //
                                     0, 0, 32 + 128, 0, 0, 0}));
}

struct Geo {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil;
};

int64_t OutSize(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d,
                bool ceil) {
  const int64_t span = size + 2 * p - d * (k - 1) - 1;
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= size + p) --out;
  return out;
}

class MaxPoolIndicesLoopTest : public ::testing::TestWithParam<Geo> {};

TEST_P(MaxPoolIndicesLoopTest, MatchesTheTapLoopAndTheMaxPoolGradient) {
  const Geo t = GetParam();
  const Window2d w{t.kh,
                   t.kw,
                   t.sh,
                   t.sw,
                   t.ph,
                   t.pw,
                   t.dh,
                   t.dw,
                   OutSize(t.h, t.kh, t.sh, t.ph, t.dh, t.ceil),
                   OutSize(t.w, t.kw, t.sw, t.pw, t.dw, t.ceil)};
  const int64_t planes = t.n * t.c, hw = t.h * t.w, ohw = w.oh * w.ow;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> pick(0, 11);
  for (const char* data : {"ties", "nans", "random"}) {
    SCOPED_TRACE(data);
    std::vector<double> x(planes * hw);
    const std::string kind = data;
    for (double& v : x) {
      const int r = pick(rng);
      v = static_cast<double>(r % 4);  // ties
      if (kind == "nans" && r == 0) v = std::nan("");
      if (kind == "random") v = std::ldexp(r - 5.5, r);
    }
    std::vector<double> want_y(planes * ohw);
    std::vector<int64_t> want_i(planes * ohw);
    for (int64_t p = 0; p < planes; ++p) {
      for (int64_t i = 0; i < w.oh; ++i) {
        for (int64_t j = 0; j < w.ow; ++j) {
          // PyTorch's loop: start stepped into the plane, -inf, > or NaN.
          int64_t r0 = i * t.sh - t.ph, c0 = j * t.sw - t.pw;
          const int64_t r1 = std::min(r0 + (t.kh - 1) * t.dh + 1, t.h),
                        c1 = std::min(c0 + (t.kw - 1) * t.dw + 1, t.w);
          while (r0 < 0) r0 += t.dh;
          while (c0 < 0) c0 += t.dw;
          double best = -kInf;
          int64_t arg = r0 * t.w + c0;
          for (int64_t r = r0; r < r1; r += t.dh) {
            for (int64_t q = c0; q < c1; q += t.dw) {
              const double v = x[p * hw + r * t.w + q];
              if (v > best || std::isnan(v)) best = v, arg = r * t.w + q;
            }
          }
          want_y[p * ohw + i * w.ow + j] = best;
          want_i[p * ohw + i * w.ow + j] = arg;
        }
      }
    }
    const std::vector<int64_t> in_shape = {t.n, t.c, t.h, t.w},
                               out_shape = {t.n, t.c, w.oh, w.ow};
    std::vector<double> y(want_y.size(), 7);
    std::vector<int64_t> at(want_i.size(), -7);
    ASSERT_TRUE(MaxPool2dWithIndices(View(x, in_shape), w, View(y, out_shape),
                                     View(at, out_shape))
                    .ok());
    EXPECT_EQ(at, want_i);
    for (size_t k = 0; k < y.size(); ++k) {
      ASSERT_TRUE(y[k] == want_y[k] ||
                  (std::isnan(y[k]) && std::isnan(want_y[k])))
          << k << ": " << y[k] << " vs " << want_y[k];
    }
    // The gradient at the indices is max_pool2d_backward's (the same rule,
    // the same order of additions): bitwise equal.
    std::vector<double> g(y.size()), gi(x.size(), 9), want_gi(x.size(), 9);
    for (size_t k = 0; k < g.size(); ++k) {
      g[k] = 0.1 * static_cast<double>(k + 1);
    }
    ASSERT_TRUE(MaxPool2dWithIndicesBackward(
                    View(g, out_shape), View(at, out_shape), View(gi, in_shape))
                    .ok());
    ASSERT_TRUE(MaxPool2dBackward(View(g, out_shape), View(x, in_shape),
                                  StridedView{}, w, View(want_gi, in_shape))
                    .ok());
    EXPECT_EQ(gi, want_gi);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, MaxPoolIndicesLoopTest,
    ::testing::Values(Geo{2, 3, 8, 6, 2, 2, 2, 2, 0, 0, 1, 1, false},
                      Geo{2, 3, 7, 9, 2, 3, 2, 3, 0, 0, 1, 1, false},
                      Geo{2, 3, 7, 7, 3, 3, 2, 2, 1, 1, 1, 1, false},
                      Geo{1, 4, 9, 8, 3, 2, 2, 1, 1, 1, 1, 2, false},
                      Geo{2, 2, 9, 8, 2, 2, 2, 2, 0, 0, 2, 1, false},
                      Geo{2, 3, 5, 5, 2, 2, 2, 2, 0, 0, 1, 1, true},
                      Geo{1, 3, 9, 8, 3, 3, 2, 2, 0, 0, 1, 1, true},
                      Geo{2, 2, 6, 7, 2, 2, 1, 1, 1, 1, 1, 1, true},
                      Geo{1, 2, 2, 5, 2, 1, 1, 1, 1, 0, 3, 1, false},
                      // Split over the pool.
                      Geo{8, 16, 24, 24, 3, 3, 2, 2, 1, 1, 1, 1, false},
                      Geo{4, 32, 33, 17, 2, 2, 2, 2, 0, 0, 1, 1, true}));

}  // namespace
}  // namespace cpu
}  // namespace tensord

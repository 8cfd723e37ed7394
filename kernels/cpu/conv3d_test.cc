// conv3d.h's direct loops (in double) against one another's transposes and
// oneDNN's 3-d primitives (onednn_conv.h, float32) against them, on
// geometries with stride, padding, dilation and groups, one large enough to
// split the batch over the pool (4 threads, BUILD) into blocks; the values
// themselves are checked against PyTorch in tests/python_torch/test_conv3d.py.
#include "kernels/cpu/conv3d.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/test_views.h"

namespace tensord {
namespace cpu {
namespace {

using testing::Random;
using testing::View;

struct Case {
  int64_t n, c, o, groups, in, k, stride, pad, dil;
};

ConvGeometry3d GeometryOf(const Case& t) {
  ConvGeometry3d g{t.n, t.c, t.o, t.groups, {}, {}, {}, {}, {}, {}};
  for (int a = 0; a < 3; ++a) {
    g.in[a] = t.in + a, g.k[a] = t.k, g.stride[a] = t.stride;
    g.pad[a] = t.pad, g.dil[a] = t.dil;
    g.out[a] = (g.in[a] + 2 * t.pad - t.dil * (t.k - 1) - 1) / t.stride + 1;
  }
  return g;
}

std::vector<int64_t> Sizes(int64_t n, int64_t c, const int64_t* s) {
  return {n, c, s[0], s[1], s[2]};
}

int64_t Vol(const int64_t* v) { return v[0] * v[1] * v[2]; }

template <typename T>
double Dot(const std::vector<T>& a, const std::vector<T>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double{a[i]} * b[i];
  return s;
}

class Conv3dTest : public ::testing::TestWithParam<Case> {};

// <dy, conv(x, w)> = <dx(dy, w), x> = <dw(dy, x), w>: the three loops are
// one bilinear form, so each gradient is the other's adjoint.
TEST_P(Conv3dTest, GradientsAreAdjointsOfTheForward) {
  const ConvGeometry3d g = GeometryOf(GetParam());
  std::mt19937 rng(3);
  const int64_t cg = g.c / g.groups;
  auto x = Random<double>(g.n * g.c * Vol(g.in), &rng);
  auto w = Random<double>(g.o * cg * Vol(g.k), &rng);
  auto dy = Random<double>(g.n * g.o * Vol(g.out), &rng);
  std::vector<double> y(dy.size()), dx(x.size()), dw(w.size());
  const auto xs = Sizes(g.n, g.c, g.in), ws = Sizes(g.o, cg, g.k),
             ys = Sizes(g.n, g.o, g.out);
  ASSERT_TRUE(Conv3d(View(x, xs), View(w, ws), g, View(y, ys)).ok());
  ASSERT_TRUE(
      Conv3dBackwardInput(View(dy, ys), View(w, ws), g, View(dx, xs)).ok());
  ASSERT_TRUE(
      Conv3dBackwardWeight(View(dy, ys), View(x, xs), g, View(dw, ws)).ok());
  const double form = Dot(dy, y);
  EXPECT_NEAR(Dot(dx, x), form, 1e-9 * (1 + std::abs(form)));
  EXPECT_NEAR(Dot(dw, w), form, 1e-9 * (1 + std::abs(form)));
}

TEST_P(Conv3dTest, OnednnMatchesDirectLoops) {
  const ConvGeometry3d g = GeometryOf(GetParam());
  ASSERT_TRUE(OnednnConvApplies(DType::kFloat32, g));
  EXPECT_FALSE(OnednnConvApplies(DType::kFloat64, g));
  std::mt19937 rng(5);
  const int64_t cg = g.c / g.groups;
  auto x = Random<float>(g.n * g.c * Vol(g.in), &rng);
  auto w = Random<float>(g.o * cg * Vol(g.k), &rng);
  auto dy = Random<float>(g.n * g.o * Vol(g.out), &rng);
  std::vector<double> xd(x.begin(), x.end()), wd(w.begin(), w.end()),
      dyd(dy.begin(), dy.end());
  const auto xs = Sizes(g.n, g.c, g.in), ws = Sizes(g.o, cg, g.k),
             ys = Sizes(g.n, g.o, g.out);
  std::vector<double> want_y(dy.size()), want_dx(x.size()), want_dw(w.size());
  ASSERT_TRUE(Conv3d(View(xd, xs), View(wd, ws), g, View(want_y, ys)).ok());
  ASSERT_TRUE(
      Conv3dBackwardInput(View(dyd, ys), View(wd, ws), g, View(want_dx, xs))
          .ok());
  ASSERT_TRUE(
      Conv3dBackwardWeight(View(dyd, ys), View(xd, xs), g, View(want_dw, ws))
          .ok());
  std::vector<float> y(dy.size(), 9), dx(x.size(), 9), dw(w.size(), 9);
  std::vector<float> scratch(OnednnConvGradWorkspace(g));
  ASSERT_TRUE(OnednnConv3d(View(x, xs), View(w, ws), g, View(y, ys)).ok());
  ASSERT_TRUE(
      OnednnConv3dBackwardInput(View(dy, ys), View(w, ws), g, View(dx, xs))
          .ok());
  ASSERT_TRUE(OnednnConv3dBackwardWeight(
                  View(dy, ys), View(x, xs), g,
                  View(scratch, {static_cast<int64_t>(scratch.size())}),
                  View(dw, ws))
                  .ok());
  // A float32 sum's rounding over the terms of the largest sum (the weight
  // gradient's: every image and output position).
  const double tol = 1e-6 * static_cast<double>(g.n * Vol(g.out) * g.o) + 1e-5;
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want_y[i], tol) << i;
  for (size_t i = 0; i < dx.size(); ++i) {
    ASSERT_NEAR(dx[i], want_dx[i], tol) << i;
  }
  for (size_t i = 0; i < dw.size(); ++i) {
    ASSERT_NEAR(dw[i], want_dw[i], tol) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, Conv3dTest,
    ::testing::Values(Case{2, 4, 6, 2, 4, 3, 2, 1, 1},    // strided, grouped
                      Case{1, 3, 2, 1, 3, 1, 1, 0, 1},    // 1x1x1
                      Case{3, 2, 4, 1, 5, 2, 1, 2, 2},    // dilated, padded
                      Case{8, 8, 8, 1, 8, 3, 1, 1, 1},    // split into blocks
                      Case{2, 6, 6, 6, 4, 3, 3, 1, 1}));  // depthwise

}  // namespace
}  // namespace cpu
}  // namespace tensord

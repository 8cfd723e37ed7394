// conv3d and its gradient rows through the op table on the CPU: float32
// (oneDNN) against float64 (the direct loops) on the same values, with bias,
// stride, padding, dilation and groups; a non-contiguous input; an output
// gradient sized as conv_transpose3d's output_padding makes it (oneDNN
// refuses it, the loops take it); and the shapes PyTorch refuses are
// INVALID_ARGUMENT. Kernel-level cases: kernels/cpu/conv3d_test.cc; values
// and gradients against PyTorch: tests/python_torch/test_conv3d.py.
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using I = std::vector<int64_t>;
using AttrMap = std::map<std::string, AttrValue>;

class Conv3dOpsTest : public CpuOpTest {
 protected:
  // Random values in [-1, 1) of `shape`, as float32 and as float64.
  std::pair<Tensor, Tensor> Random(const Shape& shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> d(n);
    for (double& x : d) x = u(rng_);
    std::vector<float> f(d.begin(), d.end());
    return {
        From(f, DType::kFloat32, shape),
        From(std::vector<double>(f.begin(), f.end()), DType::kFloat64, shape)};
  }
  void ExpectClose(const Tensor& f32, const Tensor& f64, const char* what) {
    ASSERT_EQ(f32.shape(), f64.shape()) << what;
    const auto a = Doubles(f32), b = Doubles(f64);
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_NEAR(a[i], b[i], 1e-4 * (1 + std::abs(b[i]))) << what << " " << i;
    }
  }
  std::mt19937 rng_{11};
};

TEST_F(Conv3dOpsTest, Float32MatchesFloat64WithGradients) {
  const AttrMap geo = {{"stride", I{2, 1, 1}},
                       {"padding", I{1, 0, 1}},
                       {"dilation", I{1, 2, 1}},
                       {"groups", int64_t{2}}};
  auto [x, xd] = Random({2, 4, 5, 6, 5});
  auto [w, wd] = Random({6, 2, 3, 2, 3});
  auto [b, bd] = Random({6});
  Tensor y = Run1("conv3d", {x, w, b}, geo),
         yd = Run1("conv3d", {xd, wd, bd}, geo);
  EXPECT_EQ(y.shape(), (Shape{2, 6, 3, 4, 5}));
  ExpectClose(y, yd, "output");
  auto [dy, dyd] = Random({2, 6, 3, 4, 5});
  AttrMap gi = geo, gw = geo;
  gi["input_size"] = I{2, 4, 5, 6, 5};
  gw["weight_size"] = I{6, 2, 3, 2, 3};
  ExpectClose(Run1("conv3d_backward_input", {dy, w}, gi),
              Run1("conv3d_backward_input", {dyd, wd}, gi), "input grad");
  ExpectClose(Run1("conv3d_backward_weight", {dy, x}, gw),
              Run1("conv3d_backward_weight", {dyd, xd}, gw), "weight grad");
}

TEST_F(Conv3dOpsTest, NonContiguousInput) {
  auto [x, xd] = Random({3, 2, 4, 5, 6});
  auto [w, wd] = Random({3, 3, 2, 2, 2});
  // [3, 2, 4, 5, 6] -> channels first: [2, 3, 4, 5, 6] strided.
  Tensor xt =
      Run1("transpose", {x}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
  Tensor xdt =
      Run1("transpose", {xd}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
  ExpectClose(
      Run1("conv3d", {xt, w}, {{"padding", I{1}}}),
      Run1("conv3d", {Run1("contiguous", {xdt}), wd}, {{"padding", I{1}}}),
      "output");
}

// conv_transpose3d(dilation 2, output_padding 1 >= stride 1) of a
// [1, 2, 3, 3, 3] input is conv3d_backward_input sized [1, 1, 8, 8, 8]: one
// larger on each axis than conv3d's geometry makes for a [.., 3, 3, 3]
// gradient (its output would be 4 x 4 x 4).
TEST_F(Conv3dOpsTest, GradientSizedByOutputPadding) {
  auto [dy, dyd] = Random({1, 2, 3, 3, 3});
  auto [w, wd] = Random({2, 1, 3, 3, 3});
  const AttrMap a = {{"input_size", I{1, 1, 8, 8, 8}}, {"dilation", I{2}}};
  Tensor gi = Run1("conv3d_backward_input", {dy, w}, a);
  EXPECT_EQ(gi.shape(), (Shape{1, 1, 8, 8, 8}));
  ExpectClose(gi, Run1("conv3d_backward_input", {dyd, wd}, a), "input grad");
}

TEST_F(Conv3dOpsTest, RefusesWhatPyTorchRefuses) {
  auto [x, xd] = Random({1, 4, 3, 3, 3});
  auto [w4, w4d] = Random({2, 4, 3, 3});
  auto [w, wd] = Random({2, 4, 3, 3, 3});
  auto [bad_bias, bbd] = Random({3});
  auto code = [&](std::vector<Tensor> in, AttrMap attrs) {
    return Run("conv3d", std::move(in), std::move(attrs)).status().code();
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code({x, w4}, {}), kInvalid);                       // 4-d weight
  EXPECT_EQ(code({x, w}, {{"groups", int64_t{2}}}), kInvalid);  // channels
  EXPECT_EQ(code({x, w, bad_bias}, {}), kInvalid);
  EXPECT_EQ(code({x, w}, {{"dilation", I{2}}}), kInvalid);   // window > input
  EXPECT_EQ(code({x, w}, {{"stride", I{1, 1}}}), kInvalid);  // 2 values
  EXPECT_EQ(code({x, wd}, {}), kInvalid);                    // dtypes differ
  EXPECT_EQ(
      Run("conv3d_backward_weight", {x, x}, {{"weight_size", I{2, 4, 3, 3, 3}}})
          .status()
          .code(),
      kInvalid);  // gradient channels != weight_size[0]
}

}  // namespace
}  // namespace tensord

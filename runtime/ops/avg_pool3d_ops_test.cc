// avg_pool3d, adaptive_avg_pool3d and their backward rows through the op
// table on the CPU: with a unit depth they are avg_pool2d's and
// adaptive_avg_pool2d's (an independent kernel) in every form (ceil_mode,
// count_include_pad, divisor_override, padding), forward and backward;
// along the depth, hand-computed boxes; what PyTorch refuses is
// INVALID_ARGUMENT. Against PyTorch itself: tests/python_torch/
// test_avg_pools.py.
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using I = std::vector<int64_t>;

class AvgPool3dOpsTest : public CpuOpTest {
 protected:
  Tensor Unsqueeze(const Tensor& t, int64_t dim) {
    return Run1("unsqueeze", {t}, {{"dim", dim}});
  }
};

void ExpectNear(const std::vector<double>& got,
                const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_NEAR(got[k], want[k], 1e-12 * (1 + std::fabs(want[k]))) << k;
  }
}

TEST_F(AvgPool3dOpsTest, UnitDepthIsAvgPool2d) {
  struct Form {
    I kernel, stride, padding;
    bool ceil, include_pad;
    int64_t divisor;
  };
  const std::vector<Form> forms = {{{3}, {1}, {1}, true, false, 2},
                                   {{4, 4}, {2, 3}, {1}, true, false, 2},
                                   {{2, 2}, {}, {0}, false, true, -2},
                                   {{4, 4}, {2, 2}, {2}, true, true, 0},
                                   {{3, 2}, {2, 1}, {1, 1}, false, false, 0}};
  for (const Shape& shape : {Shape{2, 3, 9, 8}, Shape{3, 7, 9}}) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = std::sin(0.7 * i) * 3;
    const Tensor x = From(v, DType::kFloat64, shape);
    const int64_t depth_dim = static_cast<int64_t>(shape.size()) - 2;
    for (const Form& f : forms) {
      SCOPED_TRACE(testing::Message()
                   << ShapeToString(shape) << " k=" << ShapeToString(f.kernel));
      auto with_depth = [](const I& v, int64_t depth) {
        I r = {depth};
        if (v.empty()) return I{};
        r.push_back(v[0]);
        r.push_back(v.size() == 2 ? v[1] : v[0]);
        return r;
      };
      const AttrMap a2 = {{"kernel_size", f.kernel},
                          {"stride", f.stride},
                          {"padding", f.padding},
                          {"ceil_mode", f.ceil},
                          {"count_include_pad", f.include_pad},
                          {"divisor_override", f.divisor}};
      const AttrMap a3 = {{"kernel_size", with_depth(f.kernel, 1)},
                          {"stride", with_depth(f.stride, 1)},
                          {"padding", with_depth(f.padding, 0)},
                          {"ceil_mode", f.ceil},
                          {"count_include_pad", f.include_pad},
                          {"divisor_override", f.divisor}};
      const Tensor y2 = Run1("avg_pool2d", {x}, a2);
      const Tensor x3 = Unsqueeze(x, depth_dim);
      const Tensor y3 = Run1("avg_pool3d", {x3}, a3);
      ExpectNear(Doubles(y3), Doubles(y2));
      std::vector<double> gv(y2.numel());
      for (size_t k = 0; k < gv.size(); ++k) gv[k] = 0.5 + k % 7;
      const Tensor g2 = From(gv, DType::kFloat64, y2.shape());
      ExpectNear(Doubles(Run1("avg_pool3d_backward",
                              {Unsqueeze(g2, depth_dim), x3}, a3)),
                 Doubles(Run1("avg_pool2d_backward", {g2, x}, a2)));
      // adaptive: the same with the depth kept at 1.
      const AttrMap o2 = {{"output_size", I{4, 5}}};
      const AttrMap o3 = {{"output_size", I{1, 4, 5}}};
      const Tensor ya2 = Run1("adaptive_avg_pool2d", {x}, o2);
      ExpectNear(Doubles(Run1("adaptive_avg_pool3d", {x3}, o3)), Doubles(ya2));
      const Tensor ga2 = From(std::vector<double>(ya2.numel(), 1.5),
                              DType::kFloat64, ya2.shape());
      ExpectNear(Doubles(Run1("adaptive_avg_pool3d_backward",
                              {Unsqueeze(ga2, depth_dim), x3})),
                 Doubles(Run1("adaptive_avg_pool2d_backward", {ga2, x})));
    }
  }
}

TEST_F(AvgPool3dOpsTest, BoxesAlongTheDepth) {
  // x[d, h, w] = 100 d + 10 h + w on a 3 x 2 x 2 volume, one plane.
  std::vector<float> v;
  for (int d = 0; d < 3; ++d) {
    for (int h = 0; h < 2; ++h) {
      for (int w = 0; w < 2; ++w) v.push_back(100.f * d + 10.f * h + w);
    }
  }
  const Tensor x = From(v, DType::kFloat32, {1, 3, 2, 2});
  // kernel 2, stride 1, padding 1 in depth only: depth windows [-1, 1),
  // [0, 2), [1, 3), [2, 4) clipped to [0, 1), [0, 2), [1, 3), [2, 3).
  const AttrMap a = {{"kernel_size", I{2, 2, 2}},
                     {"stride", I{1, 2, 2}},
                     {"padding", I{1, 0, 0}},
                     {"count_include_pad", false}};
  // Each box's mean: the mean depth * 100 + 5.5.
  EXPECT_EQ(Doubles(Run1("avg_pool3d", {x}, a)),
            (std::vector<double>{5.5, 55.5, 155.5, 205.5}));
  AttrMap with_pad = a;
  with_pad["count_include_pad"] = true;  // padded boxes of 8: half of 1 and 4
  EXPECT_EQ(Doubles(Run1("avg_pool3d", {x}, with_pad)),
            (std::vector<double>{5.5 / 2, 55.5, 155.5, 205.5 / 2}));
  AttrMap divided = a;
  divided["divisor_override"] = int64_t{-4};
  EXPECT_EQ(Doubles(Run1("avg_pool3d", {x}, divided)),
            (std::vector<double>{-5.5, -55.5 * 2, -155.5 * 2, -205.5}));
  // adaptive, depth 3 -> 2: [0, 2) and [1, 3).
  EXPECT_EQ(
      Doubles(Run1("adaptive_avg_pool3d", {x}, {{"output_size", I{2, 1, 1}}})),
      (std::vector<double>{55.5, 155.5}));
}

TEST_F(AvgPool3dOpsTest, RefusesWhatPyTorchRefuses) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  auto code = [&](const char* op, const Shape& shape, AttrMap attrs) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    const Tensor x = From(std::vector<float>(n, 0), DType::kFloat32, shape);
    return Run(op, {x}, std::move(attrs)).status().code();
  };
  EXPECT_EQ(code("avg_pool3d", {1, 4, 4}, {{"kernel_size", I{1}}}), kInvalid);
  EXPECT_EQ(code("avg_pool3d", {1, 1, 0, 4, 4}, {{"kernel_size", I{1}}}),
            kInvalid);
  EXPECT_EQ(code("avg_pool3d", {1, 1, 4, 4, 4}, {{"kernel_size", I{2, 2}}}),
            kInvalid);
  EXPECT_EQ(code("avg_pool3d", {1, 1, 4, 4, 4},
                 {{"kernel_size", I{2}}, {"padding", I{2}}}),
            kInvalid);
  EXPECT_EQ(code("avg_pool3d", {1, 1, 1, 4, 4}, {{"kernel_size", I{2}}}),
            kInvalid);  // output depth 0
  EXPECT_EQ(code("avg_pool3d", {1, 1, 4, 4, 4},
                 {{"kernel_size", I{2}}, {"stride", I{0}}}),
            kInvalid);
  EXPECT_EQ(code("avg_pool3d", {0, 1, 4, 4, 4}, {{"kernel_size", I{2}}}),
            absl::StatusCode::kOk);
  EXPECT_EQ(code("adaptive_avg_pool3d", {1, 4, 4}, {{"output_size", I{2}}}),
            kInvalid);
  EXPECT_EQ(
      code("adaptive_avg_pool3d", {1, 2, 4, 4, 4}, {{"output_size", I{2, 2}}}),
      kInvalid);
  // The backward: grad_output must be self pooled.
  const Tensor x =
      From(std::vector<float>(64, 0), DType::kFloat32, {1, 1, 4, 4, 4});
  const Tensor g =
      From(std::vector<float>(8, 0), DType::kFloat32, {1, 1, 2, 2, 2});
  const Tensor g_bad =
      From(std::vector<float>(4, 0), DType::kFloat32, {1, 1, 1, 2, 2});
  EXPECT_TRUE(Run("avg_pool3d_backward", {g, x}, {{"kernel_size", I{2}}}).ok());
  EXPECT_EQ(Run("avg_pool3d_backward", {g_bad, x}, {{"kernel_size", I{2}}})
                .status()
                .code(),
            kInvalid);
  EXPECT_EQ(Run("adaptive_avg_pool3d_backward", {g_bad, g_bad}).status().code(),
            absl::StatusCode::kOk);
  EXPECT_EQ(
      Run("adaptive_avg_pool3d_backward", {Unsqueeze(g, 0), x}).status().code(),
      kInvalid);
}

}  // namespace
}  // namespace tensord

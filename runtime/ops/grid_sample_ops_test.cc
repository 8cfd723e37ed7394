// grid_sampler_2d_backward through the op table on the CPU: an identity grid
// (align_corners, pixel centres) passes the output gradient to the input
// unchanged, and its grid gradient is the image's central differences;
// float32 agrees with float64 in every mode; output_mask [0, 1] leaves the
// input gradient zero; misshapen calls are INVALID_ARGUMENT. Values against
// PyTorch: tests/python_torch/test_grid_sample.py.
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

class GridSampleOpsTest : public CpuOpTest {
 protected:
  std::vector<Tensor> RunAll(std::vector<Tensor> in, AttrMap attrs = {}) {
    auto r = Run("grid_sampler_2d_backward", std::move(in), std::move(attrs));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : std::vector<Tensor>{Tensor(), Tensor()};
  }
  template <typename T>
  static std::vector<T> Values(const Tensor& t) {
    std::vector<T> v(t.numel());
    std::memcpy(v.data(), t.data(), t.nbytes());
    return v;
  }
};

TEST_F(GridSampleOpsTest, IdentityGridPassesTheGradientThrough) {
  const int64_t H = 3, W = 4;
  std::vector<double> grid, x(H * W), g(H * W);
  for (int64_t i = 0; i < H; ++i) {
    for (int64_t j = 0; j < W; ++j) {
      grid.push_back(2.0 * j / (W - 1) - 1);  // x, then y
      grid.push_back(2.0 * i / (H - 1) - 1);
      x[i * W + j] = static_cast<double>(i * i + 3 * j);  // linear in x
      g[i * W + j] = 0.5 + static_cast<double>(i * W + j);
    }
  }
  auto r = RunAll({From(g, DType::kFloat64, {1, 1, H, W}),
                   From(x, DType::kFloat64, {1, 1, H, W}),
                   From(grid, DType::kFloat64, {1, H, W, 2})},
                  {{"align_corners", true}});
  const auto gi = Values<double>(r[0]), gg = Values<double>(r[1]);
  for (int64_t k = 0; k < H * W; ++k) EXPECT_NEAR(gi[k], g[k], 1e-12) << k;
  // At a pixel centre the x derivative is the forward difference to the
  // right neighbour, x[j + 1] - x[j] = 3, times d ix / d gx = (W - 1) / 2
  // (the last column's right neighbour is zero padding: left out).
  for (int64_t i = 0; i < H; ++i) {
    for (int64_t j = 0; j + 1 < W; ++j) {
      EXPECT_NEAR(gg[2 * (i * W + j)], g[i * W + j] * 3 * (W - 1) / 2.0, 1e-12);
    }
  }
}

TEST_F(GridSampleOpsTest, Float32MatchesFloat64InEveryMode) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(-1.4, 1.4);
  auto random = [&](int64_t n) {
    std::vector<double> v(n);
    for (double& e : v) e = u(rng);
    return v;
  };
  const auto g = random(2 * 3 * 4 * 5), x = random(2 * 3 * 5 * 6),
             grid = random(2 * 4 * 5 * 2);
  auto f32 = [](const std::vector<double>& v) {
    return std::vector<float>(v.begin(), v.end());
  };
  for (int64_t mode = 0; mode < 3; ++mode) {
    for (int64_t pad = 0; pad < 3; ++pad) {
      for (bool align : {false, true}) {
        const AttrMap a = {{"interpolation_mode", mode},
                           {"padding_mode", pad},
                           {"align_corners", align}};
        auto d = RunAll({From(g, DType::kFloat64, {2, 3, 4, 5}),
                         From(x, DType::kFloat64, {2, 3, 5, 6}),
                         From(grid, DType::kFloat64, {2, 4, 5, 2})},
                        a);
        auto s = RunAll({From(f32(g), DType::kFloat32, {2, 3, 4, 5}),
                         From(f32(x), DType::kFloat32, {2, 3, 5, 6}),
                         From(f32(grid), DType::kFloat32, {2, 4, 5, 2})},
                        a);
        for (int k = 0; k < 2; ++k) {
          const auto want = Values<double>(d[k]);
          const auto got = Values<float>(s[k]);
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i])))
                << mode << " " << pad << " " << align << " output " << k;
          }
        }
      }
    }
  }
}

TEST_F(GridSampleOpsTest, MaskedInputGradientIsZero) {
  std::vector<float> g(4, 1), x(9, 2), grid(8, 0.25);
  auto r = RunAll({From(g, DType::kFloat32, {1, 1, 2, 2}),
                   From(x, DType::kFloat32, {1, 1, 3, 3}),
                   From(grid, DType::kFloat32, {1, 2, 2, 2})},
                  {{"output_mask", I{0, 1}}});
  for (float v : Values<float>(r[0])) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(r[1].shape(), (Shape{1, 2, 2, 2}));
}

TEST_F(GridSampleOpsTest, RefusesMisshapenCalls) {
  std::vector<float> g(4, 1), x(9, 2), grid(8, 0.25), grid3(12, 0.25);
  const Tensor tg = From(g, DType::kFloat32, {1, 1, 2, 2}),
               tx = From(x, DType::kFloat32, {1, 1, 3, 3}),
               tgrid = From(grid, DType::kFloat32, {1, 2, 2, 2}),
               bad = From(grid3, DType::kFloat32, {1, 2, 2, 3});
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  auto code = [&](std::vector<Tensor> in, AttrMap a) {
    return Run("grid_sampler_2d_backward", std::move(in), std::move(a))
        .status()
        .code();
  };
  EXPECT_EQ(code({tg, tx, bad}, {}), kInvalid);
  EXPECT_EQ(code({tx, tx, tgrid}, {}), kInvalid);
  EXPECT_EQ(code({tg, tx, tgrid}, {{"interpolation_mode", int64_t{3}}}),
            kInvalid);
  EXPECT_EQ(code({tg, tx, tgrid}, {{"output_mask", I{1}}}), kInvalid);
}

}  // namespace
}  // namespace tensord

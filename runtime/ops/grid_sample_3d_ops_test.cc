// grid_sampler_3d and its backward through the op table on the CPU: an
// identity grid (align_corners, voxel centres) returns the volume and
// passes the output gradient to the input unchanged; a point at the centre
// of a cell is the mean of its 8 corners, each of which gets 1/8 of its
// gradient; float32 agrees with float64 in every mode; misshapen calls and
// bicubic are INVALID_ARGUMENT. Values against PyTorch:
// tests/python_torch/test_grid_sample_3d.py.
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using V = std::vector<double>;

class GridSample3dOpsTest : public CpuOpTest {
 protected:
  static constexpr int64_t kD = 2, kH = 3, kW = 4;
  // x of voxel (z, y, x) = z * 100 + y * 10 + x.
  Tensor Volume() {
    V v;
    for (int64_t z = 0; z < kD; ++z) {
      for (int64_t y = 0; y < kH; ++y) {
        for (int64_t x = 0; x < kW; ++x) v.push_back(z * 100.0 + y * 10 + x);
      }
    }
    return From(v, DType::kFloat64, {1, 1, kD, kH, kW});
  }
  // align_corners: -1 and 1 are the first and last voxel centres.
  static double Norm(double i, int64_t size) { return 2 * i / (size - 1) - 1; }
};

TEST_F(GridSample3dOpsTest, IdentityGridReturnsTheVolumeAndItsGradient) {
  V grid;
  for (int64_t z = 0; z < kD; ++z) {
    for (int64_t y = 0; y < kH; ++y) {
      for (int64_t x = 0; x < kW; ++x) {
        grid.insert(grid.end(), {Norm(x, kW), Norm(y, kH), Norm(z, kD)});
      }
    }
  }
  const Tensor g = From(grid, DType::kFloat64, {1, kD, kH, kW, 3});
  const Tensor vol = Volume();
  for (int64_t mode : {0, 1}) {
    const AttrMap a = {{"interpolation_mode", mode}, {"align_corners", true}};
    EXPECT_EQ(Doubles(Run1("grid_sampler_3d", {vol, g}, a)), Doubles(vol));
    const Tensor gi = Run1("grid_sampler_3d_backward", {vol, vol, g}, a, 0);
    const auto got = Doubles(gi), want = Doubles(vol);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-9) << mode << " " << i;
    }
  }
}

TEST_F(GridSample3dOpsTest, CellCentreIsTheMeanOfItsCorners) {
  // The centre of the cell between voxels (0..1, 1..2, 2..3).
  const V grid = {Norm(2.5, kW), Norm(1.5, kH), Norm(0.5, kD)};
  const Tensor g = From(grid, DType::kFloat64, {1, 1, 1, 1, 3});
  const auto out = Doubles(
      Run1("grid_sampler_3d", {Volume(), g}, {{"align_corners", true}}));
  EXPECT_NEAR(out[0], 0.5 * 100 + 1.5 * 10 + 2.5, 1e-12);  // linear volume
  const Tensor go = From(V{8.0}, DType::kFloat64, {1, 1, 1, 1, 1});
  auto r = Run("grid_sampler_3d_backward", {go, Volume(), g},
               {{"align_corners", true}});
  ASSERT_TRUE(r.ok()) << r.status();
  const auto gi = Doubles((*r)[0]);
  double total = 0;
  for (double v : gi) total += v;
  EXPECT_NEAR(total, 8.0, 1e-12);
  EXPECT_NEAR(gi[(0 * kH + 1) * kW + 2], 1.0, 1e-12);  // a corner: 8 / 8
  // d out / d grid: the volume's slope along each axis (1, 10, 100 per
  // voxel) times d index / d coordinate ((size - 1) / 2), times 8.
  const auto gg = Doubles((*r)[1]);
  EXPECT_NEAR(gg[0], 8 * 1 * (kW - 1) / 2.0, 1e-9);
  EXPECT_NEAR(gg[1], 8 * 10 * (kH - 1) / 2.0, 1e-9);
  EXPECT_NEAR(gg[2], 8 * 100 * (kD - 1) / 2.0, 1e-9);
}

TEST_F(GridSample3dOpsTest, Float32MatchesFloat64InEveryMode) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1.3, 1.3);
  auto random = [&](int64_t n) {
    V v(n);
    for (double& e : v) e = u(rng);
    return v;
  };
  const Shape xs = {2, 2, 3, 4, 3}, gs = {2, 2, 3, 2, 3}, os = {2, 2, 2, 3, 2};
  const V x = random(2 * 2 * 3 * 4 * 3), grid = random(2 * 2 * 3 * 2 * 3),
          go = random(2 * 2 * 2 * 3 * 2);
  auto f32 = [](const V& v) { return std::vector<float>(v.begin(), v.end()); };
  for (int64_t mode : {0, 1}) {
    for (int64_t pad : {0, 1, 2}) {
      for (bool align : {false, true}) {
        const AttrMap a = {{"interpolation_mode", mode},
                           {"padding_mode", pad},
                           {"align_corners", align}};
        auto d =
            Run("grid_sampler_3d_backward",
                {From(go, DType::kFloat64, os), From(x, DType::kFloat64, xs),
                 From(grid, DType::kFloat64, gs)},
                a);
        auto s = Run("grid_sampler_3d_backward",
                     {From(f32(go), DType::kFloat32, os),
                      From(f32(x), DType::kFloat32, xs),
                      From(f32(grid), DType::kFloat32, gs)},
                     a);
        ASSERT_TRUE(d.ok() && s.ok()) << d.status() << s.status();
        for (int k = 0; k < 2; ++k) {
          const auto want = Doubles((*d)[k]), got = Doubles((*s)[k]);
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i])))
                << mode << " " << pad << " " << align << " output " << k;
          }
        }
      }
    }
  }
}

TEST_F(GridSample3dOpsTest, RefusesMisshapenCallsAndBicubic) {
  const Tensor vol = Volume();
  const Tensor g2 = From(V(6, 0.0), DType::kFloat64, {1, 1, 1, 3, 2});
  const Tensor g = From(V(3, 0.0), DType::kFloat64, {1, 1, 1, 1, 3});
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(Run("grid_sampler_3d", {vol, g2}).status().code(), kInvalid);
  EXPECT_EQ(
      Run("grid_sampler_3d", {vol, g}, {{"interpolation_mode", int64_t{2}}})
          .status()
          .code(),
      kInvalid);
  EXPECT_EQ(Run("grid_sampler_3d_backward", {vol, vol, g}).status().code(),
            kInvalid);  // grad_output not [N, C, Do, Ho, Wo] of the grid
}

}  // namespace
}  // namespace tensord

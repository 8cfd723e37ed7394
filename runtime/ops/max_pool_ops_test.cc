// max_pool2d_with_indices and its backward through the op table on the CPU:
// the values are max_pool2d's, each index points at its value, and the
// gradient at the indices is max_pool2d_backward's (the same rule), bitwise,
// on data with ties and NaNs, for overlapping, padded, dilated and ceil-mode
// windows, 3-d and 4-d, float32, float64 and bfloat16, non-contiguous input
// too. Then the checks: misshapen or mistyped gradients and indices are
// INVALID_ARGUMENT, indices outside the plane add nothing, windows and
// inputs PyTorch refuses are refused. Kernel-level cases: kernels/cpu/
// max_pool_test.cc; against PyTorch: tests/python (op_cases_nn.py).
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using I = std::vector<int64_t>;
using AttrMap = std::map<std::string, AttrValue>;

using MaxPoolOpsTest = CpuOpTest;

bool SameOrBothNaN(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

TEST_F(MaxPoolOpsTest, IndicesAgreeWithMaxPool2dAndItsBackward) {
  const std::vector<AttrMap> geometries = {
      {{"kernel_size", I{2}}},
      {{"kernel_size", I{3}}, {"stride", I{2}}, {"padding", I{1}}},
      {{"kernel_size", I{3, 2}},
       {"stride", I{2, 1}},
       {"padding", I{1, 1}},
       {"dilation", I{1, 2}},
       {"ceil_mode", true}},
      {{"kernel_size", I{2}}, {"stride", I{1}}, {"ceil_mode", true}}};
  for (DType d : {DType::kFloat32, DType::kFloat64, DType::kBFloat16}) {
    for (const Shape& shape : {Shape{2, 3, 7, 6}, Shape{3, 8, 5}}) {
      for (bool nans : {false, true}) {
        for (const AttrMap& attrs : geometries) {
          SCOPED_TRACE(testing::Message()
                       << DTypeName(d) << " " << ShapeToString(shape)
                       << (nans ? " nans" : " ties") << " k="
                       << ShapeToString(std::get<I>(attrs.at("kernel_size"))));
          // Values from a small set (ties), some NaN, transposed in memory.
          int64_t numel = 1;
          for (int64_t s : shape) numel *= s;
          std::vector<float> v(numel);
          for (int64_t i = 0; i < numel; ++i) {
            v[i] = (nans && i % 11 == 3) ? NAN : static_cast<float>(i * 7 % 5);
          }
          Tensor x32 = From(v, DType::kFloat32, shape);
          Tensor x = Run1("to",
                          {Run1("transpose", {x32},
                                {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}})},
                          {{"dtype", d}});
          x = Run1("transpose", {x},
                   {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
          auto with = Run("max_pool2d_with_indices", {x}, attrs);
          ASSERT_TRUE(with.ok()) << with.status();
          ASSERT_EQ(with->size(), 2u);
          const Tensor &y = (*with)[0], &at = (*with)[1];
          ASSERT_EQ(at.dtype(), DType::kInt64);
          const Tensor want_y = Run1("max_pool2d", {x}, attrs);
          ASSERT_EQ(y.shape(), want_y.shape());
          ASSERT_EQ(at.shape(), want_y.shape());
          const std::vector<double> got = Doubles(y), want = Doubles(want_y),
                                    xs = Doubles(x);
          const std::vector<int64_t> idx = Ints64(at);
          const int64_t hw = shape[shape.size() - 2] * shape.back();
          const int64_t ohw = y.shape()[y.ndim() - 2] * y.shape().back();
          for (size_t k = 0; k < got.size(); ++k) {
            ASSERT_TRUE(SameOrBothNaN(got[k], want[k])) << k;
            ASSERT_GE(idx[k], 0);
            ASSERT_LT(idx[k], hw);
            const int64_t plane = static_cast<int64_t>(k) / ohw;
            ASSERT_TRUE(SameOrBothNaN(xs[plane * hw + idx[k]], got[k])) << k;
          }
          std::vector<float> gv(y.numel());
          for (size_t k = 0; k < gv.size(); ++k) gv[k] = 0.25f * (k % 9 + 1);
          const Tensor g = Run1("to", {From(gv, DType::kFloat32, y.shape())},
                                {{"dtype", d}});
          const Tensor gi =
              Run1("max_pool2d_with_indices_backward", {g, x, at}, attrs);
          const Tensor want_gi = Run1("max_pool2d_backward", {g, x}, attrs);
          ASSERT_EQ(gi.shape(), x.shape());
          ASSERT_EQ(gi.dtype(), d);
          EXPECT_EQ(Doubles(gi), Doubles(want_gi));
        }
      }
    }
  }
}

TEST_F(MaxPoolOpsTest, BackwardChecksItsInputsAndSkipsIndicesOutsideThePlane) {
  const AttrMap attrs = {{"kernel_size", I{2}}};
  const Tensor x =
      From(std::vector<float>(2 * 4 * 4, 1), DType::kFloat32, {1, 2, 4, 4});
  const Tensor g = From(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8},
                        DType::kFloat32, {1, 2, 2, 2});
  const Tensor at = From(std::vector<int64_t>{0, 16, -1, 5, 15, 15, 3, 99},
                         DType::kInt64, {1, 2, 2, 2});
  const std::vector<double> gi =
      Doubles(Run1("max_pool2d_with_indices_backward", {g, x, at}, attrs));
  std::vector<double> want(32, 0);
  want[0] = 1, want[5] = 4;                 // image 0: 16 and -1 skipped
  want[16 + 15] = 5 + 6, want[16 + 3] = 7;  // image 1: 99 skipped
  EXPECT_EQ(gi, want);
  auto invalid = [&](std::vector<Tensor> in, AttrMap a) {
    auto r = Run("max_pool2d_with_indices_backward", std::move(in), a);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << r.status();
    return std::string(r.status().message());
  };
  EXPECT_NE(invalid({g, x, g}, attrs).find("indices should be int64"),
            std::string::npos);
  const Tensor at3 = From(std::vector<int64_t>(6, 0), DType::kInt64, {1, 2, 3});
  invalid({g, x, at3}, attrs);
  const Tensor g_big =
      From(std::vector<float>(18, 1), DType::kFloat32, {1, 2, 3, 3});
  EXPECT_NE(invalid({g_big, x, at}, attrs).find("grad_output should be"),
            std::string::npos);
  invalid({g, x, at}, {{"kernel_size", I{3}}});  // pools x to 1 x 1
  const Tensor g64 = Run1("to", {g}, {{"dtype", DType::kFloat64}});
  invalid({g64, x, at}, attrs);
}

TEST_F(MaxPoolOpsTest, RefusesWhatPyTorchRefuses) {
  auto code = [&](const Shape& shape, AttrMap attrs) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    const Tensor x = From(std::vector<float>(n, 0), DType::kFloat32, shape);
    return Run("max_pool2d_with_indices", {x}, attrs).status().code();
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  // An input smaller than the kernel: output size 0 (PyTorch's floor).
  EXPECT_EQ(code({1, 1, 1, 4}, {{"kernel_size", I{2}}}), kInvalid);
  EXPECT_EQ(code({1, 1, 4, 4}, {{"kernel_size", I{2}}, {"padding", I{2}}}),
            kInvalid);
  EXPECT_EQ(code({1, 1, 0, 4}, {{"kernel_size", I{1}}}), kInvalid);
  EXPECT_EQ(code({1, 4}, {{"kernel_size", I{1}}}), kInvalid);
  EXPECT_EQ(code({1, 1, 4, 4}, {{"kernel_size", I{2}}, {"stride", I{0}}}),
            kInvalid);
  // An empty batch is fine, as in PyTorch.
  EXPECT_EQ(code({0, 2, 4, 4}, {{"kernel_size", I{2}}}), absl::StatusCode::kOk);
}

}  // namespace
}  // namespace tensord

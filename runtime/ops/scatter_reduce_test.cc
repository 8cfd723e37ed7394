// scatter_reduce and index_reduce rows against values PyTorch 1.13 gives
// (torch.Tensor.scatter_reduce / index_reduce on the CPU): every reduce with
// and without self, NaN in amax, integer means (floor), a non-contiguous
// input, and the errors (negative and too-large indices, unknown reduce).
// The sweep over dtypes and shapes against PyTorch is
// tests/python_torch/test_scatter_reduce.py.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

class ScatterReduceTest : public CpuOpTest {
 protected:
  Tensor F(const std::vector<float>& v, Shape shape) {
    return From(v, DType::kFloat32, shape);
  }
  Tensor I(const std::vector<int64_t>& v, Shape shape) {
    return From(v, DType::kInt64, shape);
  }
  absl::StatusOr<Tensor> Run(const std::string& name, std::vector<Tensor> in,
                             int64_t dim, const std::string& reduce,
                             bool include_self = true) {
    auto out = CpuOpTest::Run(
        name, std::move(in),
        {{"dim", dim}, {"reduce", reduce}, {"include_self", include_self}});
    if (!out.ok()) return out.status();
    return (*out)[0];
  }
  // Row-major values of a contiguous result.
  template <typename T>
  static std::vector<T> Values(const Tensor& t) {
    EXPECT_TRUE(t.view().is_contiguous());
    const T* p = t.view().ptr<const T>();
    return std::vector<T>(p, p + t.numel());
  }
};

TEST_F(ScatterReduceTest, EveryReduceWithAndWithoutSelf) {
  const Tensor self = F({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor index = I({0, 0, 1, 0, 1, 1}, {2, 3});
  const Tensor src = F({10, 20, 30, 40, 50, 60}, {2, 3});
  struct Want {
    const char* reduce;
    bool include_self;
    std::vector<float> values;
  };
  // Column 2 of row 0 and column 0 of row 1 are named by no index: they keep
  // self's values whatever include_self says.
  const std::vector<Want> wants = {{"sum", true, {51, 22, 3, 4, 55, 96}},
                                   {"sum", false, {50, 20, 3, 4, 50, 90}},
                                   {"prod", true, {400, 40, 3, 4, 250, 10800}},
                                   {"prod", false, {400, 20, 3, 4, 50, 1800}},
                                   {"mean", true, {17, 11, 3, 4, 27.5, 32}},
                                   {"mean", false, {25, 20, 3, 4, 50, 45}},
                                   {"amax", true, {40, 20, 3, 4, 50, 60}},
                                   {"amax", false, {40, 20, 3, 4, 50, 60}},
                                   {"amin", true, {1, 2, 3, 4, 5, 6}},
                                   {"amin", false, {10, 20, 3, 4, 50, 30}}};
  for (const Want& w : wants) {
    SCOPED_TRACE(testing::Message() << w.reduce << " " << w.include_self);
    auto out =
        Run("scatter_reduce", {self, index, src}, 0, w.reduce, w.include_self);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values<float>(*out), w.values);
  }
}

TEST_F(ScatterReduceTest, NanPropagatesThroughAmax) {
  const float nan = std::nanf("");
  auto out =
      Run("scatter_reduce",
          {F({nan, 1, 2}, {3}), I({0, 1, 1, 2}, {4}), F({5, nan, 3, 1}, {4})},
          0, "amax");
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> v = Values<float>(*out);
  EXPECT_TRUE(std::isnan(v[0]));  // a NaN self stays
  EXPECT_TRUE(std::isnan(v[1]));  // a NaN src wins
  EXPECT_EQ(v[2], 2);
}

TEST_F(ScatterReduceTest, IntegerMeanRoundsDown) {
  auto out =
      Run("scatter_reduce",
          {I({7, -7, 3}, {3}), I({0, 0, 1, 1}, {4}), I({2, 3, -4, -4}, {4})}, 0,
          "mean");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<int64_t>(*out), (std::vector<int64_t>{4, -5, 3}));
}

TEST_F(ScatterReduceTest, NonContiguousInputGivesTheSameValues) {
  // self^T of a [3, 2] tensor: the [2, 3] values of the first test.
  Tensor base = F({1, 4, 2, 5, 3, 6}, {3, 2});
  Tensor self = base.AsStrided({2, 3}, {1, 2}, 0);
  auto out = Run("scatter_reduce",
                 {self, I({0, 0, 1, 0, 1, 1}, {2, 3}),
                  F({10, 20, 30, 40, 50, 60}, {2, 3})},
                 0, "prod", false);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{400, 20, 3, 4, 50, 1800}));
}

TEST_F(ScatterReduceTest, IndexReduceAlongDimOne) {
  const Tensor self = F({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor index = I({0, 2, 0, 2}, {4});
  const Tensor source = F({2, 3, 4, 5, 6, 7, 8, 9}, {2, 4});
  auto prod = Run("index_reduce", {self, index, source}, 1, "prod");
  ASSERT_TRUE(prod.ok()) << prod.status();
  EXPECT_EQ(Values<float>(*prod), (std::vector<float>{8, 2, 45, 192, 5, 378}));
  auto amin = Run("index_reduce", {self, index, source}, 1, "amin", false);
  ASSERT_TRUE(amin.ok()) << amin.status();
  EXPECT_EQ(Values<float>(*amin), (std::vector<float>{2, 2, 3, 6, 5, 7}));
  auto mean = Run("index_reduce", {self, index, source}, 1, "mean", false);
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_EQ(Values<float>(*mean), (std::vector<float>{3, 2, 4, 7, 5, 8}));
}

TEST_F(ScatterReduceTest, BadIndicesAndReducesAreClearErrors) {
  const Tensor self = F({1, 2, 3}, {3});
  const Tensor src = F({5}, {1});
  for (int64_t bad : {int64_t{-1}, int64_t{3}}) {
    auto out = Run("scatter_reduce", {self, I({bad}, {1}), src}, 0, "sum");
    ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(out.status().message()),
              "scatter_reduce(): index " + std::to_string(bad) +
                  " is out of bounds for dimension 0 with size 3 (indices "
                  "must be in [0, 3))");
    auto ir = Run("index_reduce", {self, I({bad}, {1}), src}, 0, "amax");
    ASSERT_EQ(ir.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(ir.status().message().find("index_reduce(): "), std::string::npos)
        << ir.status();
  }
  auto reduce = Run("scatter_reduce", {self, I({0}, {1}), src}, 0, "max");
  EXPECT_EQ(reduce.status().code(), absl::StatusCode::kInvalidArgument);
  auto no_sum = Run("index_reduce", {self, I({0}, {1}), src}, 0, "sum");
  EXPECT_EQ(no_sum.status().code(), absl::StatusCode::kInvalidArgument);
  auto shape = Run("index_reduce", {self, I({0, 1}, {2}), src}, 0, "prod");
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tensord

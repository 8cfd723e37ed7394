// scan_ops.cc's rows (cummax/cummin, logcumsumexp, mode, searchsorted) on
// the CPU against values PyTorch 1.13 gives: ties, NaN, infinities, 0-d and
// empty inputs, negative dims, non-contiguous inputs, and the errors. The
// sweep over dtypes and shapes against PyTorch, gradients included, is
// tests/python_torch/test_scan_ops.py.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

class ScanOpsTest : public CpuOpTest {
 protected:
  Tensor F(const std::vector<float>& v, Shape shape) {
    return From(v, DType::kFloat32, shape);
  }
  Tensor I(const std::vector<int64_t>& v, Shape shape) {
    return From(v, DType::kInt64, shape);
  }
  // Row-major values of a contiguous result.
  template <typename T>
  static std::vector<T> Values(const Tensor& t) {
    EXPECT_TRUE(t.view().is_contiguous());
    const T* p = t.view().ptr<const T>();
    return std::vector<T>(p, p + t.numel());
  }
  // Floats with NaN shown as the string "nan" so EXPECT_EQ can compare them.
  static std::vector<std::string> Shown(const Tensor& t) {
    std::vector<std::string> out;
    for (float v : Values<float>(t)) {
      out.push_back(std::isnan(v) ? "nan" : std::to_string(v));
    }
    return out;
  }
  static std::vector<std::string> Shown(const std::vector<float>& v) {
    std::vector<std::string> out;
    for (float x : v) out.push_back(std::isnan(x) ? "nan" : std::to_string(x));
    return out;
  }
};

TEST_F(ScanOpsTest, CummaxAndCumminTakeTheLaterTieAndKeepNan) {
  const Tensor x = F({1, 3, 3, kNan, 2, kNan}, {6});
  auto max = Run("cummax", {x}, {{"dim", int64_t{0}}});
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_EQ(Shown((*max)[0]), Shown({1, 3, 3, kNan, kNan, kNan}));
  EXPECT_EQ(Values<int64_t>((*max)[1]),
            (std::vector<int64_t>{0, 1, 2, 3, 3, 5}));
  auto min = Run("cummin", {x}, {{"dim", int64_t{-1}}});
  ASSERT_TRUE(min.ok()) << min.status();
  EXPECT_EQ(Shown((*min)[0]), Shown({1, 1, 1, kNan, kNan, kNan}));
  EXPECT_EQ(Values<int64_t>((*min)[1]),
            (std::vector<int64_t>{0, 0, 0, 3, 3, 5}));
}

TEST_F(ScanOpsTest, CummaxAlongTheFirstDimOfANonContiguousInput) {
  // [[4, 1], [2, 5], [4, 0]] seen transposed from a [2, 3] tensor.
  Tensor base = F({4, 2, 4, 1, 5, 0}, {2, 3});
  auto t =
      Run("transpose", {base}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
  ASSERT_TRUE(t.ok()) << t.status();
  auto out = Run("cummax", {(*t)[0]}, {{"dim", int64_t{-2}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>((*out)[0]), (std::vector<float>{4, 1, 4, 5, 4, 5}));
  EXPECT_EQ(Values<int64_t>((*out)[1]),
            (std::vector<int64_t>{0, 0, 0, 1, 2, 1}));
}

TEST_F(ScanOpsTest, CumExtremeOfZeroDimAndEmptyInputs) {
  auto scalar = Run("cummin", {F({7}, {})}, {{"dim", int64_t{-1}}});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ((*scalar)[0].shape(), Shape{});
  EXPECT_EQ(Values<int64_t>((*scalar)[1]), (std::vector<int64_t>{0}));
  auto empty = Run("cummax", {F({}, {0, 3})}, {{"dim", int64_t{1}}});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[1].shape(), (Shape{0, 3}));
  EXPECT_EQ(Run("cummax", {F({1}, {1})}, {{"dim", int64_t{1}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ScanOpsTest, LogCumSumExpIsStableForInfinities) {
  auto out =
      Run("logcumsumexp", {F({-kInf, -kInf, 0, std::log(3.0f), kInf, 1}, {6})},
          {{"dim", int64_t{0}}});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> v = Values<float>((*out)[0]);
  EXPECT_EQ(v[0], -kInf);
  EXPECT_EQ(v[1], -kInf);
  EXPECT_FLOAT_EQ(v[2], 0.0f);
  EXPECT_FLOAT_EQ(v[3], std::log(4.0f));
  EXPECT_EQ(v[4], kInf);
  EXPECT_EQ(v[5], kInf);
  auto nan = Run("logcumsumexp", {F({1, kNan, 2}, {3})}, {{"dim", int64_t{0}}});
  ASSERT_TRUE(nan.ok()) << nan.status();
  EXPECT_EQ(Shown((*nan)[0]).back(), "nan");
  EXPECT_EQ(Run("logcumsumexp", {I({1, 2}, {2})}, {{"dim", int64_t{0}}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ScanOpsTest, ModeTakesTheSmallestMostFrequentValueAndItsLastIndex) {
  const Tensor x = F({1, 3, 2, 3, 2, 5, 5, 1, 5, 1}, {2, 5});
  auto out = Run("mode", {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape{2});
  EXPECT_EQ(Values<float>((*out)[0]), (std::vector<float>{2, 5}));
  EXPECT_EQ(Values<int64_t>((*out)[1]), (std::vector<int64_t>{4, 3}));
  auto kept = Run("mode", {x}, {{"dim", int64_t{0}}, {"keepdim", true}});
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ((*kept)[0].shape(), (Shape{1, 5}));
  // Every column has two distinct values: the smaller, at its only index.
  EXPECT_EQ(Values<float>((*kept)[0]), (std::vector<float>{1, 3, 1, 3, 1}));
  EXPECT_EQ(Values<int64_t>((*kept)[1]), (std::vector<int64_t>{0, 0, 1, 0, 1}));
}

TEST_F(ScanOpsTest, ModeOfZeroDimEmptyAndIntegerInputs) {
  auto scalar = Run("mode", {F({4}, {})});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ(Values<float>((*scalar)[0]), (std::vector<float>{4}));
  EXPECT_EQ(Values<int64_t>((*scalar)[1]), (std::vector<int64_t>{0}));
  auto empty = Run("mode", {F({}, {0, 3})}, {{"dim", int64_t{1}}});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[0].shape(), Shape{0});
  auto bad = Run("mode", {F({}, {0, 3})}, {{"dim", int64_t{0}}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  auto ints = Run("mode", {I({7, -2, 7, -2, 0}, {5})});
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_EQ(Values<int64_t>((*ints)[0]), (std::vector<int64_t>{-2}));
  EXPECT_EQ(Values<int64_t>((*ints)[1]), (std::vector<int64_t>{3}));
}

TEST_F(ScanOpsTest, SearchSortedLeftRightAndInt32) {
  const Tensor bd = F({1, 3, 5, 7, 9}, {5});
  const Tensor v = F({3, 6, 9, 0, 10, kNan}, {2, 3});
  auto left = Run("searchsorted", {bd, v});
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_EQ((*left)[0].dtype(), DType::kInt64);
  EXPECT_EQ(Values<int64_t>((*left)[0]),
            (std::vector<int64_t>{1, 3, 4, 0, 5, 5}));
  for (auto attrs :
       {AttrMap{{"right", true}}, AttrMap{{"side", std::string("right")}}}) {
    auto right = Run("searchsorted", {bd, v}, attrs);
    ASSERT_TRUE(right.ok()) << right.status();
    EXPECT_EQ(Values<int64_t>((*right)[0]),
              (std::vector<int64_t>{2, 3, 5, 0, 5, 5}));
  }
  auto narrow = Run("searchsorted", {bd, v}, {{"out_int32", true}});
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ((*narrow)[0].dtype(), DType::kInt32);
  EXPECT_EQ(Values<int32_t>((*narrow)[0]),
            (std::vector<int32_t>{1, 3, 4, 0, 5, 5}));
}

TEST_F(ScanOpsTest, SearchSortedPerRowPromotedAndSorted) {
  // Row r of the boundaries serves row r of the values; int64 values are
  // promoted to the float boundaries' dtype.
  auto rows = Run("searchsorted", {F({0, 2, 4, 10, 20, 30}, {2, 3}),
                                   I({3, 0, 25, 30}, {2, 2})});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(Values<int64_t>((*rows)[0]), (std::vector<int64_t>{2, 0, 2, 2}));
  // [5, 1, 3] in the sorter's order is [1, 3, 5].
  auto sorted = Run("searchsorted",
                    {F({5, 1, 3}, {3}), F({3, 4}, {2}), I({1, 2, 0}, {3})},
                    {{"right", true}});
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_EQ(Values<int64_t>((*sorted)[0]), (std::vector<int64_t>{2, 2}));
  auto scalar = Run("searchsorted", {F({1, 3, 5}, {3}), F({4}, {})});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ((*scalar)[0].shape(), Shape{});
  EXPECT_EQ(Values<int64_t>((*scalar)[0]), (std::vector<int64_t>{2}));
}

TEST_F(ScanOpsTest, SearchSortedErrorsAreWordedAsPyTorch) {
  const Tensor bd = F({1, 3, 5}, {3});
  auto expect_error = [&](absl::StatusOr<std::vector<Tensor>> r,
                          const std::string& text) {
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << r.status();
    EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status();
  };
  expect_error(Run("searchsorted", {bd, F({1}, {1})},
                   {{"right", true}, {"side", std::string("left")}}),
               "side and right can't be set to opposites");
  expect_error(
      Run("searchsorted", {bd, F({1}, {1})}, {{"side", std::string("middle")}}),
      "side can only be 'left' or 'right'");
  expect_error(Run("searchsorted", {bd, F({1}, {1}), I({0, 1, 3}, {3})}),
               "sorter index out of range");
  expect_error(Run("searchsorted", {bd, F({1}, {1}), I({0, 1}, {2})}),
               "boundary and sorter must have the same size");
  expect_error(Run("searchsorted", {F({1, 2, 3, 4}, {2, 2}), F({1}, {})}),
               "input value can be a scalar only when boundaries tensor "
               "dimension is 1");
  expect_error(
      Run("searchsorted", {F({1, 2, 3, 4}, {2, 2}), F({1, 2}, {1, 2})}),
      "first N-1 dimensions of boundaries tensor");
  expect_error(Run("searchsorted", {F({1}, {}), F({1}, {1})}),
               "boundaries tensor should have positive dimension");
}

}  // namespace
}  // namespace tensord

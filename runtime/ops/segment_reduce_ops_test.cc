// segment_reduce and _segment_reduce_backward through the op table on the
// CPU, against sums, means, maxima, minima and products of segments worked
// out by hand: lengths and offsets, an empty segment (initial, else the
// identity; a mean NaN), an inner axis, a max's gradient split over ties,
// a product's gradient at a zero; bounds that do not fit the axis are
// INVALID_ARGUMENT. Against PyTorch: tests/python_torch/test_segment_reduce.py.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using I = std::vector<int64_t>;
using V = std::vector<double>;

class SegmentReduceOpsTest : public CpuOpTest {
 protected:
  // Segments {3, 3, 1} {} {0, 2} {5, 5}.
  const V data_ = {3, 3, 1, 0, 2, 5, 5};
  Tensor Data() { return From(data_, DType::kFloat64, {7}); }
  Tensor Lengths() { return From(I{3, 0, 2, 2}, DType::kInt64, {4}); }
  V Reduce(const std::string& r, AttrMap extra = {}) {
    extra["reduce"] = r;
    return Doubles(Run1("segment_reduce", {Data(), Lengths()}, extra));
  }
};

TEST_F(SegmentReduceOpsTest, EachReductionOfEachSegment) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Reduce("sum"), (V{7, 0, 2, 10}));
  EXPECT_EQ(Reduce("max"), (V{3, -inf, 2, 5}));
  EXPECT_EQ(Reduce("min"), (V{1, inf, 0, 5}));
  EXPECT_EQ(Reduce("prod"), (V{9, 1, 0, 25}));
  const V mean = Reduce("mean");
  EXPECT_DOUBLE_EQ(mean[0], 7 / 3.0);
  EXPECT_TRUE(std::isnan(mean[1]));
  EXPECT_EQ(mean[3], 5);
  // An initial value joins every segment (and is an empty one's value).
  EXPECT_EQ(Reduce("sum", {{"has_initial", true}, {"initial", 0.5}}),
            (V{7.5, 0.5, 2.5, 10.5}));
  EXPECT_EQ(Reduce("max", {{"has_initial", true}, {"initial", 4.0}}),
            (V{4, 4, 4, 5}));
  // Offsets name the same segments.
  EXPECT_EQ(Doubles(Run1("segment_reduce",
                         {Data(), From(I{0, 3, 3, 5, 7}, DType::kInt64, {5})},
                         {{"offsets", true}, {"reduce", std::string("sum")}})),
            (V{7, 0, 2, 10}));
}

TEST_F(SegmentReduceOpsTest, InnerAxis) {
  // [2, 3] rows, segments of 1 and 2 columns along axis 1.
  const Tensor x = From(V{1, 2, 3, 4, 5, 6}, DType::kFloat64, {2, 3});
  const Tensor lengths = From(I{1, 2, 2, 1}, DType::kInt64, {2, 2});
  EXPECT_EQ(
      Doubles(Run1("segment_reduce", {x, lengths},
                   {{"axis", int64_t{1}}, {"reduce", std::string("sum")}})),
      (V{1, 5, 9, 6}));
}

TEST_F(SegmentReduceOpsTest, GradientsOfMaxTiesAndProdZeros) {
  const Tensor g = From(V{1, 7, -1, 2}, DType::kFloat64, {4});
  auto grad = [&](const std::string& r) {
    const AttrMap a = {{"reduce", r}};
    const Tensor y = Run1("segment_reduce", {Data(), Lengths()}, a);
    return Doubles(
        Run1("_segment_reduce_backward", {g, y, Data(), Lengths()}, a));
  };
  // Max: the two 3s share 1; -1 goes to the 2 (the empty segment's 7 to
  // nothing); the two 5s share 2.
  EXPECT_EQ(grad("max"), (V{0.5, 0.5, 0, 0, -1, 1, 1}));
  // Prod: g * prod / x, and at the zero the product of the others (2).
  EXPECT_EQ(grad("prod"), (V{3, 3, 9, -2, -0.0, 10, 10}));
  EXPECT_EQ(grad("mean"), (V{1 / 3.0, 1 / 3.0, 1 / 3.0, -0.5, -0.5, 1, 1}));
}

TEST_F(SegmentReduceOpsTest, RefusesBoundsThatDoNotFit) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  auto code = [&](const I& bounds, bool offsets) {
    return Run("segment_reduce",
               {Data(), From(bounds, DType::kInt64,
                             {static_cast<int64_t>(bounds.size())})},
               {{"offsets", offsets}})
        .status()
        .code();
  };
  EXPECT_EQ(code({3, 3}, false), kInvalid);    // lengths sum to 6, not 7
  EXPECT_EQ(code({8, -1}, false), kInvalid);   // a negative length
  EXPECT_EQ(code({0, 4, 2}, true), kInvalid);  // decreasing offsets
  EXPECT_EQ(code({0, 9}, true), kInvalid);     // past the axis
  EXPECT_EQ(Run("segment_reduce", {Data(), Lengths()},
                {{"reduce", std::string("median")}})
                .status()
                .code(),
            kInvalid);
}

}  // namespace
}  // namespace tensord

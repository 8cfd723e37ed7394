#include "runtime/core/shape.h"

#include "gtest/gtest.h"
#include "runtime/core/dtype.h"

namespace tensord {
namespace {

TEST(ShapeTest, ContiguousStridesAreRowMajor) {
  EXPECT_EQ(ContiguousStrides({2, 3, 4}), Strides({12, 4, 1}));
  EXPECT_EQ(ContiguousStrides({}), Strides({}));
}

TEST(ShapeTest, BroadcastFollowsNumpyRules) {
  EXPECT_EQ(*BroadcastShapes({3, 1}, {1, 4}), Shape({3, 4}));
  EXPECT_EQ(*BroadcastShapes({5, 3, 4}, {4}), Shape({5, 3, 4}));
  EXPECT_EQ(*BroadcastShapes({}, {2, 2}), Shape({2, 2}));
  EXPECT_EQ(*BroadcastShapes({0, 1}, {1, 3}), Shape({0, 3}));
  auto bad = BroadcastShapes({2, 3}, {4});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[2, 3] and [4]"), std::string::npos);
}

TEST(ShapeTest, CheckShapeRejectsNegativeAndOverflow) {
  EXPECT_TRUE(CheckShape({2, 3}, 4).ok());
  EXPECT_FALSE(CheckShape({2, -1}, 4).ok());
  EXPECT_FALSE(CheckShape({int64_t{1} << 40, int64_t{1} << 30}, 4).ok());
  EXPECT_FALSE(CheckShape({1, 1, 1, 1, 1, 1, 1, 1, 1}, 4).ok());
}

TEST(ShapeTest, WrapDim) {
  EXPECT_EQ(*WrapDim(-1, 3), 2);
  EXPECT_EQ(*WrapDim(0, 0), 0);
  EXPECT_FALSE(WrapDim(3, 3).ok());
  EXPECT_FALSE(WrapDim(-4, 3).ok());
}

TEST(DTypeTest, PromotionMatchesPyTorch) {
  EXPECT_EQ(PromoteTypes(DType::kInt64, DType::kFloat32), DType::kFloat32);
  EXPECT_EQ(PromoteTypes(DType::kFloat32, DType::kFloat64), DType::kFloat64);
  EXPECT_EQ(PromoteTypes(DType::kBool, DType::kInt32), DType::kInt32);
  EXPECT_EQ(PromoteTypes(DType::kInt32, DType::kInt64), DType::kInt64);
  EXPECT_EQ(PromoteTypes(DType::kFloat16, DType::kBFloat16), DType::kFloat32);
  EXPECT_EQ(PromoteTypes(DType::kUInt8, DType::kInt8), DType::kInt32);
  EXPECT_FALSE(DTypeFromWire(0).ok());
  EXPECT_FALSE(DTypeFromWire(10).ok());
}

}  // namespace
}  // namespace tensord

#include "client/dtype.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(DTypeTest, MatchesWireNumbering) {
  EXPECT_EQ(ToWire(DType::kFloat32), v1::FLOAT32);
  EXPECT_EQ(ToWire(DType::kBool), v1::BOOL);
  EXPECT_EQ(*DTypeFromWire(v1::INT64), DType::kInt64);
  EXPECT_FALSE(DTypeFromWire(0).ok());
  EXPECT_FALSE(DTypeFromWire(10).ok());
}

TEST(DTypeTest, NamesAndSizes) {
  EXPECT_EQ(DTypeName(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(*DTypeFromName("float64"), DType::kFloat64);
  EXPECT_EQ(*DTypeFromName("long"), DType::kInt64);
  EXPECT_EQ(DTypeFromName("complex64").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ItemSize(DType::kFloat64), 8u);
  EXPECT_EQ(ItemSize(DType::kFloat16), 2u);
  EXPECT_EQ(ItemSize(DType::kBool), 1u);
  EXPECT_EQ(DTypeOf<int32_t>::value, DType::kInt32);
}

TEST(DTypeTest, HalfRoundTrips) {
  for (float v :
       {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, std::ldexp(1.0f, -24)}) {
    EXPECT_EQ(HalfToFloat(FloatToHalf(v)), v) << v;
  }
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(1e6f))));
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(NAN))));
  // 1 + 2^-11 is halfway between 1 and the next half: ties to even (1).
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00);
}

TEST(DTypeTest, BFloat16RoundTrips) {
  for (float v : {0.0f, 1.0f, -3.0f, 256.0f}) {
    EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(v)), v) << v;
  }
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_NEAR(BFloat16ToFloat(FloatToBFloat16(3.14159f)), 3.14159f, 0.02f);
}

}  // namespace
}  // namespace tensord

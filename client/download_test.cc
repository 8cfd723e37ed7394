#include "client/download.h"

#include <cstring>

#include "gtest/gtest.h"

namespace tensord {
namespace {

v1::Data Chunk(uint64_t offset, std::string data, bool last) {
  v1::Data d;
  d.set_request_id(7);
  d.set_offset(offset);
  d.mutable_payload()->set_data(std::move(data));
  d.set_last(last);
  return d;
}

std::string FloatBytes(std::vector<float> values) {
  std::string bytes(values.size() * 4, '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

TEST(DataAssemblerTest, AssemblesChunksInOrder) {
  std::string all = FloatBytes({1, 2, 3, 4, 5, 6});
  v1::Data first = Chunk(0, all.substr(0, 10), false);
  first.mutable_meta()->set_dtype(v1::FLOAT32);
  first.mutable_meta()->add_shape(2);
  first.mutable_meta()->add_shape(3);
  first.mutable_meta()->set_device("cpu");
  first.set_total_bytes(24);
  DataAssembler assembler;
  ASSERT_TRUE(assembler.Add(first).ok());
  EXPECT_FALSE(assembler.done());
  ASSERT_TRUE(assembler.Add(Chunk(10, all.substr(10), true)).ok());
  ASSERT_TRUE(assembler.done());
  HostTensor t = assembler.Take();
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.device, "cpu");
  EXPECT_EQ(ToVector<float>(t), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ToVector<int64_t>(t), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(DataAssemblerTest, RejectsProtocolViolations) {
  DataAssembler no_meta;
  EXPECT_EQ(no_meta.Add(Chunk(0, "abcd", true)).code(),
            absl::StatusCode::kInternal);

  v1::Data first = Chunk(0, FloatBytes({1}), false);
  first.mutable_meta()->set_dtype(v1::FLOAT32);
  first.mutable_meta()->add_shape(2);
  DataAssembler gap;
  ASSERT_TRUE(gap.Add(first).ok());
  EXPECT_FALSE(gap.Add(Chunk(8, FloatBytes({2}), true)).ok());  // skips 4..8

  DataAssembler short_total;
  ASSERT_TRUE(short_total.Add(first).ok());
  EXPECT_FALSE(short_total.Add(Chunk(4, "", true)).ok());  // 4 of 8 bytes
}

TEST(DataAssemblerTest, ZeroDimAndEmpty) {
  v1::Data scalar = Chunk(0, FloatBytes({2.5f}), true);
  scalar.mutable_meta()->set_dtype(v1::FLOAT32);
  DataAssembler assembler;
  ASSERT_TRUE(assembler.Add(scalar).ok());
  ASSERT_TRUE(assembler.done());
  HostTensor t = assembler.Take();
  EXPECT_EQ(t.numel(), 1);
  EXPECT_EQ(ToVector<double>(t), std::vector<double>{2.5});
}

TEST(DataAssemblerTest, BoolVectorsPackTheirElements) {
  v1::Data chunk = Chunk(0, FloatBytes({0.0f, -1.5f, 2.0f, 0.0f}), true);
  chunk.mutable_meta()->set_dtype(v1::FLOAT32);
  chunk.mutable_meta()->add_shape(4);
  DataAssembler assembler;
  ASSERT_TRUE(assembler.Add(chunk).ok());
  HostTensor t = assembler.Take();
  EXPECT_EQ(ToVector<bool>(t), (std::vector<bool>{false, true, true, false}));
}

TEST(ConvertTest, AllSourceTypes) {
  const int64_t i64[] = {-3, 7};
  int32_t out[2];
  ConvertElements<int32_t>(DType::kInt64, i64, 2, out);
  EXPECT_EQ(out[0], -3);
  const uint8_t b[] = {0, 2};
  bool bools[2];
  ConvertElements<bool>(DType::kBool, b, 2, bools);
  EXPECT_FALSE(bools[0]);
  EXPECT_TRUE(bools[1]);
  const uint16_t half[] = {FloatToHalf(1.5f), FloatToHalf(-2.0f)};
  float f[2];
  ConvertElements<float>(DType::kFloat16, half, 2, f);
  EXPECT_EQ(f[0], 1.5f);
  EXPECT_EQ(f[1], -2.0f);
  const uint16_t bf[] = {FloatToBFloat16(4.0f)};
  double d[1];
  ConvertElements<double>(DType::kBFloat16, bf, 1, d);
  EXPECT_EQ(d[0], 4.0);
}

}  // namespace
}  // namespace tensord

#include "client/chunking.h"

#include "gtest/gtest.h"

namespace tensord {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(ChunkingTest, SplitsIntoConsecutiveChunks) {
  std::vector<Chunk> chunks = PlanChunks(2 * kMiB + 5, kMiB);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].offset, 0u);
  EXPECT_EQ(chunks[0].size, kMiB);
  EXPECT_FALSE(chunks[0].last);
  EXPECT_EQ(chunks[1].offset, kMiB);
  EXPECT_EQ(chunks[2].offset, 2 * kMiB);
  EXPECT_EQ(chunks[2].size, 5u);
  EXPECT_TRUE(chunks[2].last);
}

TEST(ChunkingTest, ExactMultipleAndSmall) {
  std::vector<Chunk> exact = PlanChunks(2 * kMiB, kMiB);
  ASSERT_EQ(exact.size(), 2u);
  EXPECT_TRUE(exact[1].last);
  EXPECT_EQ(exact[1].size, kMiB);
  std::vector<Chunk> small = PlanChunks(12, kMiB);
  ASSERT_EQ(small.size(), 1u);
  EXPECT_TRUE(small[0].last);
  EXPECT_EQ(small[0].size, 12u);
}

TEST(ChunkingTest, EmptyTensorIsOneEmptyChunk) {
  std::vector<Chunk> chunks = PlanChunks(0, kMiB);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].size, 0u);
  EXPECT_TRUE(chunks[0].last);
}

TEST(ChunkingTest, OneGiBPlansWithoutLargeNumbersBreaking) {
  const uint64_t total = (uint64_t{1} << 30) + 3;
  std::vector<Chunk> chunks = PlanChunks(total, kMiB);
  ASSERT_EQ(chunks.size(), 1025u);
  uint64_t sum = 0;
  for (const Chunk& c : chunks) {
    EXPECT_EQ(c.offset, sum);
    sum += c.size;
  }
  EXPECT_EQ(sum, total);
}

TEST(ChunkingTest, EffectiveChunkBytesKeepsFramesUnderTheLimit) {
  EXPECT_EQ(EffectiveChunkBytes(kMiB, 8 * kMiB), kMiB);
  EXPECT_EQ(EffectiveChunkBytes(0, 0), kMiB);  // protocol defaults
  EXPECT_EQ(EffectiveChunkBytes(kMiB, kMiB), kMiB - kFrameOverheadBytes);
  EXPECT_GE(EffectiveChunkBytes(kMiB, 100), 1u);
}

TEST(ChunkingTest, TensorBytes) {
  EXPECT_EQ(*TensorBytes(DType::kFloat32, {2, 3}), 24u);
  EXPECT_EQ(*TensorBytes(DType::kFloat64, {}), 8u);  // 0-dim
  EXPECT_EQ(*TensorBytes(DType::kInt8, {0, 5}), 0u);
  EXPECT_EQ(*TensorBytes(DType::kFloat32, {1 << 30}), uint64_t{4} << 30);
  EXPECT_FALSE(TensorBytes(DType::kFloat32, {-1}).ok());
  EXPECT_FALSE(TensorBytes(DType::kFloat64, {1LL << 40, 1LL << 30}).ok());
}

TEST(BatchPolicyTest, Thresholds) {
  BatchPolicy policy;  // 1 MiB / 1024 commands / 8 MiB frames
  EXPECT_FALSE(policy.FlushAfter(1, 100));
  EXPECT_TRUE(policy.FlushAfter(1024, 100));
  EXPECT_TRUE(policy.FlushAfter(3, kMiB));
  // An empty batch never needs flushing first.
  EXPECT_FALSE(policy.FlushBefore(0, 0, 7 * kMiB));
  // A 1 MiB chunk after 7 MiB pending would overflow the frame.
  EXPECT_TRUE(policy.FlushBefore(5, 7 * kMiB, kMiB));
  EXPECT_FALSE(policy.FlushBefore(5, kMiB, kMiB));
  EXPECT_TRUE(policy.Fits(kMiB + 100));
  EXPECT_FALSE(policy.Fits(8 * kMiB));
}

}  // namespace
}  // namespace tensord

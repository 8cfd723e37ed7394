#include "runtime/memory/block.h"

#include "gtest/gtest.h"

namespace tensord {
namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

TEST(BlockTest, RoundSizeTo512) {
  EXPECT_EQ(RoundSize(0), 512u);
  EXPECT_EQ(RoundSize(1), 512u);
  EXPECT_EQ(RoundSize(512), 512u);
  EXPECT_EQ(RoundSize(513), 1024u);
  EXPECT_EQ(RoundSize(kMiB - 1), kMiB);
  EXPECT_EQ(RoundSize(kMiB + 1), kMiB + 512);
}

TEST(BlockTest, PoolAndSegmentSizes) {
  EXPECT_TRUE(IsSmallSize(kMiB));
  EXPECT_FALSE(IsSmallSize(kMiB + 512));
  EXPECT_EQ(SegmentSize(512), 2 * kMiB);
  EXPECT_EQ(SegmentSize(kMiB), 2 * kMiB);
  EXPECT_EQ(SegmentSize(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(SegmentSize(10 * kMiB - 512), 20 * kMiB);
  EXPECT_EQ(SegmentSize(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(SegmentSize(10 * kMiB + 512), 12 * kMiB);
  EXPECT_EQ(SegmentSize(101 * kMiB), 102 * kMiB);
}

TEST(BlockTest, SplitThresholds) {
  EXPECT_TRUE(ShouldSplit(true, 2 * kMiB, 2 * kMiB - 512));
  EXPECT_FALSE(ShouldSplit(true, 1024, 1024));
  EXPECT_TRUE(ShouldSplit(false, 20 * kMiB, 18 * kMiB));
  EXPECT_FALSE(ShouldSplit(false, 20 * kMiB, 19 * kMiB));  // exactly 1 MiB
  EXPECT_TRUE(ShouldSplit(false, 20 * kMiB, 19 * kMiB - 512));
  EXPECT_FALSE(ShouldSplit(false, 20 * kMiB, 20 * kMiB - 4 * kKiB));
}

TEST(BlockTest, MergeOwners) {
  EXPECT_EQ(MergeOwners(3, 3), 3u);
  EXPECT_EQ(MergeOwners(3, kFreshMemory), 3u);
  EXPECT_EQ(MergeOwners(kFreshMemory, 4), 4u);
  EXPECT_EQ(MergeOwners(kFreshMemory, kFreshMemory), kFreshMemory);
  EXPECT_EQ(MergeOwners(3, 4), kMixedOwners);
  EXPECT_EQ(MergeOwners(kMixedOwners, 4), kMixedOwners);
}

TEST(BlockTest, OrderedByStreamThenSizeThenAddress) {
  char buf[4];
  Block a, b, c, d;
  a.stream = reinterpret_cast<StreamHandle>(1);
  a.size = 4096;
  a.ptr = buf + 1;
  b = a;
  b.ptr = buf + 0;
  c = a;
  c.size = 1024;
  d = a;
  d.stream = reinterpret_cast<StreamHandle>(2);
  d.size = 512;
  BlockSet set = {&a, &b, &c, &d};
  std::vector<Block*> order(set.begin(), set.end());
  EXPECT_EQ(order, (std::vector<Block*>{&c, &b, &a, &d}));
  Block key;
  key.stream = a.stream;
  key.size = 2000;
  EXPECT_EQ(*set.lower_bound(&key), &b);  // best fit, lowest address
}

}  // namespace
}  // namespace tensord

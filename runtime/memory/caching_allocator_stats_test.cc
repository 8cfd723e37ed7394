// Every statistic checked against a hand-computed sequence of operations.
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/memory/limited_backend.h"

namespace tensord {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

struct Expected {
  int64_t current, peak, allocated, freed;
};

class StatsTest : public ::testing::Test {
 protected:
  StatsTest()
      : alloc_(std::make_unique<CachingAllocator>(
            std::make_unique<LimitedBackend>(256 * kMiB))) {}

  void Check(const std::string& stat, const std::string& pool, Expected e) {
    SCOPED_TRACE(stat + "." + pool);
    const std::map<std::string, int64_t> m = alloc_->Stats();
    const std::string prefix = stat + "." + pool + ".";
    EXPECT_EQ(m.at(prefix + "current"), e.current);
    EXPECT_EQ(m.at(prefix + "peak"), e.peak);
    EXPECT_EQ(m.at(prefix + "allocated"), e.allocated);
    EXPECT_EQ(m.at(prefix + "freed"), e.freed);
  }
  int64_t Get(const std::string& key) { return alloc_->Stats().at(key); }

  std::unique_ptr<CachingAllocator> alloc_;
};

TEST_F(StatsTest, HandComputedSequence) {
  const StreamHandle s1 = reinterpret_cast<StreamHandle>(1);
  // 1. a = 1000 bytes, session 1: 1024-byte block, new 2 MiB small segment,
  //    split, leaving one inactive split block of 2 MiB - 1024.
  void* a = *alloc_->Allocate(1000, AllocContext{1, s1});
  Check("allocation", "all", {1, 1, 1, 0});
  Check("allocation", "small_pool", {1, 1, 1, 0});
  Check("allocation", "large_pool", {0, 0, 0, 0});
  Check("allocated_bytes", "small_pool", {1024, 1024, 1024, 0});
  Check("requested_bytes", "all", {1000, 1000, 1000, 0});
  Check("active", "all", {1, 1, 1, 0});
  Check("active_bytes", "all", {1024, 1024, 1024, 0});
  Check("segment", "small_pool", {1, 1, 1, 0});
  Check("reserved_bytes", "all", {2 * kMiB, 2 * kMiB, 2 * kMiB, 0});
  Check("inactive_split", "small_pool", {1, 1, 1, 0});
  Check("inactive_split_bytes", "all",
        {2 * kMiB - 1024, 2 * kMiB - 1024, 2 * kMiB - 1024, 0});
  EXPECT_EQ(Get("num_device_alloc"), 1);

  // 2. b = 3 MiB, session 2: large pool, 20 MiB segment split (17 MiB rest).
  void* b = *alloc_->Allocate(3 * kMiB, AllocContext{2, s1});
  Check("allocation", "all", {2, 2, 2, 0});
  Check("allocation", "large_pool", {1, 1, 1, 0});
  Check("allocated_bytes", "all",
        {1024 + 3 * kMiB, 1024 + 3 * kMiB, 1024 + 3 * kMiB, 0});
  Check("allocated_bytes", "large_pool", {3 * kMiB, 3 * kMiB, 3 * kMiB, 0});
  Check("requested_bytes", "all",
        {1000 + 3 * kMiB, 1000 + 3 * kMiB, 1000 + 3 * kMiB, 0});
  Check("segment", "all", {2, 2, 2, 0});
  Check("reserved_bytes", "all", {22 * kMiB, 22 * kMiB, 22 * kMiB, 0});
  Check("reserved_bytes", "large_pool", {20 * kMiB, 20 * kMiB, 20 * kMiB, 0});
  Check("inactive_split", "all", {2, 2, 2, 0});
  Check("inactive_split_bytes", "large_pool",
        {17 * kMiB, 17 * kMiB, 17 * kMiB, 0});
  EXPECT_EQ(Get("session.1.allocated_bytes"), 1024);
  EXPECT_EQ(Get("session.2.allocated_bytes"), 3 * kMiB);
  EXPECT_EQ(Get("stream.0x1.allocated_bytes"), 1024 + 3 * kMiB);
  EXPECT_EQ(Get("cached_free_bytes"), 19 * kMiB - 1024);
  EXPECT_EQ(Get("largest_free_block_bytes"), 17 * kMiB);

  // 3. Free a: its block merges with the free rest; the small segment is one
  //    free block again, so no longer an inactive split.
  alloc_->Free(a);
  Check("allocation", "all", {1, 2, 2, 1});
  Check("allocated_bytes", "small_pool", {0, 1024, 1024, 1024});
  Check("active", "small_pool", {0, 1, 1, 1});
  Check("requested_bytes", "small_pool", {0, 1000, 1000, 1000});
  Check("inactive_split", "small_pool", {0, 1, 1, 1});
  Check("inactive_split_bytes", "small_pool",
        {0, 2 * kMiB - 1024, 2 * kMiB - 1024, 2 * kMiB - 1024});
  EXPECT_EQ(alloc_->Stats().count("session.1.allocated_bytes"), 0u);
  EXPECT_EQ(alloc_->SessionBytes(1), 0);
  EXPECT_EQ(alloc_->SessionBytes(2), 3 * kMiB);
  alloc_->Free(b);
}

TEST_F(StatsTest, ResetPeakEmptyCacheAndFragmentation) {
  void* a = *alloc_->Allocate(1000, AllocContext{1});
  void* b = *alloc_->Allocate(3 * kMiB, AllocContext{1});
  alloc_->Free(a);
  alloc_->ResetPeakStats();
  Check("allocated_bytes", "all", {3 * kMiB, 3 * kMiB, 1024 + 3 * kMiB, 1024});
  Check("reserved_bytes", "all", {22 * kMiB, 22 * kMiB, 22 * kMiB, 0});

  // EmptyCache releases the whole-free 2 MiB small segment only.
  EXPECT_EQ(alloc_->EmptyCache(), 2 * kMiB);
  Check("segment", "small_pool", {0, 1, 1, 1});
  Check("reserved_bytes", "all", {20 * kMiB, 22 * kMiB, 22 * kMiB, 2 * kMiB});
  EXPECT_EQ(Get("num_device_free"), 1);

  // Two holes in the large segment: x (3 MiB) freed between b and y.
  void* x = *alloc_->Allocate(3 * kMiB, AllocContext{1});
  void* y = *alloc_->Allocate(3 * kMiB, AllocContext{1});
  alloc_->Free(x);
  // Free: 3 MiB hole + 11 MiB tail. Fragmentation = 1 - 11/14.
  EXPECT_EQ(Get("cached_free_bytes"), 14 * kMiB);
  EXPECT_EQ(Get("largest_free_block_bytes"), 11 * kMiB);
  MemoryStats stats = alloc_->GetStats();
  EXPECT_NEAR(stats.fragmentation, 3.0 / 14.0, 1e-9);
  EXPECT_EQ(Get("fragmentation_ppm"), 214286);
  Check("inactive_split", "large_pool", {2, 2, 4, 2});

  alloc_->Free(b);
  alloc_->Free(y);
  // b merges with the x hole (still split: y follows), then y merges both
  // neighbours and the segment is whole again.
  Check("inactive_split", "large_pool", {0, 2, 5, 5});
  Check("allocation", "all", {0, 3, 4, 4});
  EXPECT_EQ(Get("largest_free_block_bytes"), 20 * kMiB);
  EXPECT_EQ(Get("fragmentation_ppm"), 0);

  alloc_->ResetAccumulatedStats();
  Check("allocation", "all", {0, 3, 0, 0});
  EXPECT_EQ(Get("num_device_alloc"), 0);
  EXPECT_EQ(Get("num_device_free"), 0);
}

}  // namespace
}  // namespace tensord

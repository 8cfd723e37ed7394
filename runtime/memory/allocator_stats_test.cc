#include "runtime/memory/allocator_stats.h"

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(StatTest, TracksCurrentPeakAllocatedFreed) {
  Stat s;
  s.Increase(10);
  s.Increase(5);
  s.Decrease(12);
  EXPECT_EQ(s.current, 3);
  EXPECT_EQ(s.peak, 15);
  EXPECT_EQ(s.allocated, 15);
  EXPECT_EQ(s.freed, 12);
  s.ResetPeak();
  EXPECT_EQ(s.peak, 3);
  s.ResetAccumulated();
  EXPECT_EQ(s.allocated, 0);
  EXPECT_EQ(s.freed, 0);
  EXPECT_EQ(s.current, 3);
}

TEST(StatTest, ArraysUpdateAllAndOnePool) {
  StatArray a;
  IncreaseStat(a, kSmallPool, 4);
  IncreaseStat(a, kLargePool, 6);
  DecreaseStat(a, kSmallPool, 1);
  EXPECT_EQ(a[kAllPools].current, 9);
  EXPECT_EQ(a[kAllPools].peak, 10);
  EXPECT_EQ(a[kSmallPool].current, 3);
  EXPECT_EQ(a[kLargePool].current, 6);
}

TEST(StatsToMapTest, TorchKeyNames) {
  MemoryStats stats;
  IncreaseStat(stats.device.allocated_bytes, kSmallPool, 512);
  stats.device.num_ooms = 2;
  stats.session_bytes[7] = 512;
  stats.stream_bytes[reinterpret_cast<StreamHandle>(0x10)] = 512;
  stats.fragmentation = 0.25;
  std::map<std::string, int64_t> m = StatsToMap(stats);
  EXPECT_EQ(m.at("allocated_bytes.all.current"), 512);
  EXPECT_EQ(m.at("allocated_bytes.small_pool.peak"), 512);
  EXPECT_EQ(m.at("allocated_bytes.large_pool.allocated"), 0);
  EXPECT_EQ(m.at("num_ooms"), 2);
  EXPECT_EQ(m.at("session.7.allocated_bytes"), 512);
  EXPECT_EQ(m.at("stream.0x10.allocated_bytes"), 512);
  EXPECT_EQ(m.at("fragmentation_ppm"), 250000);
  for (const char* stat : {"allocation", "segment", "active", "inactive_split",
                           "allocated_bytes", "reserved_bytes", "active_bytes",
                           "inactive_split_bytes", "requested_bytes"}) {
    for (const char* pool : {"all", "small_pool", "large_pool"}) {
      for (const char* field : {"current", "peak", "allocated", "freed"}) {
        EXPECT_EQ(m.count(std::string(stat) + "." + pool + "." + field), 1u)
            << stat << "." << pool << "." << field;
      }
    }
  }
  for (const char* key :
       {"num_alloc_retries", "num_device_alloc", "num_device_free",
        "largest_free_block_bytes", "cached_free_bytes", "capacity_bytes"}) {
    EXPECT_EQ(m.count(key), 1u) << key;
  }
}

}  // namespace
}  // namespace tensord

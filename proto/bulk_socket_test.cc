// The bulk socket's lane arithmetic (proto/bulk_socket.h) against spans
// worked out by hand, and the properties every split must have: lanes tile
// [0, n) in order, each starts on kBulkLaneAlign, and none carries more than
// its share and one alignment unit.
#include "proto/bulk_socket.h"

#include <cstdint>
#include <random>

#include "gtest/gtest.h"

namespace tensord {
namespace {

constexpr uint64_t kMiB = 1 << 20;

void ExpectSpan(uint64_t n, uint32_t lanes, uint32_t lane, uint64_t begin,
                uint64_t end) {
  const BulkLaneSpan span = BulkLane(n, lanes, lane);
  EXPECT_EQ(span.begin, begin) << n << " bytes, lane " << lane << "/" << lanes;
  EXPECT_EQ(span.end, end) << n << " bytes, lane " << lane << "/" << lanes;
}

TEST(BulkLaneTest, SpansWorkedOutByHand) {
  // 10 MiB over 4: 2.5 MiB each (2621440 = 40 * 64 KiB).
  ExpectSpan(10 * kMiB, 4, 0, 0, 2621440);
  ExpectSpan(10 * kMiB, 4, 1, 2621440, 5242880);
  ExpectSpan(10 * kMiB, 4, 3, 7864320, 10485760);
  // 5 MiB + 1 over 2: ceil is 2621441, rounded up to 41 * 64 KiB.
  ExpectSpan(5 * kMiB + 1, 2, 0, 0, 2686976);
  ExpectSpan(5 * kMiB + 1, 2, 1, 2686976, 5 * kMiB + 1);
  // 1000 bytes over 4: one 64 KiB unit holds them all; lanes 1-3 are empty.
  ExpectSpan(1000, 4, 0, 0, 1000);
  ExpectSpan(1000, 4, 1, 1000, 1000);
  ExpectSpan(1000, 4, 3, 1000, 1000);
  // 0 or 1 lanes: lane 0 has everything.
  ExpectSpan(12345, 0, 0, 0, 12345);
  ExpectSpan(12345, 1, 0, 0, 12345);
  ExpectSpan(12345, 1, 1, 12345, 12345);
  ExpectSpan(0, 3, 2, 0, 0);
}

TEST(BulkLaneTest, LanesTileTheTransferInOrder) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const uint64_t n = rng() % (64 * kMiB);
    const uint32_t lanes = 1 + static_cast<uint32_t>(rng() % kBulkMaxLanes);
    uint64_t next = 0;
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      const BulkLaneSpan span = BulkLane(n, lanes, lane);
      ASSERT_EQ(span.begin, next) << n << " " << lanes << " " << lane;
      ASSERT_LE(span.begin, span.end);
      if (span.begin < n) ASSERT_EQ(span.begin % kBulkLaneAlign, 0u);
      // No lane carries more than its share rounded up to a unit.
      ASSERT_LE(span.end - span.begin, n / lanes + kBulkLaneAlign);
      next = span.end;
    }
    ASSERT_EQ(next, n) << n << " " << lanes;
  }
}

TEST(BulkLaneTest, LanesForGiveEachLaneFourMiBOrMore) {
  EXPECT_EQ(BulkLanesFor(3 * kMiB, 4), 1u);
  EXPECT_EQ(BulkLanesFor(8 * kMiB, 4), 2u);
  EXPECT_EQ(BulkLanesFor(12 * kMiB - 1, 4), 2u);
  EXPECT_EQ(BulkLanesFor(256 * kMiB, 4), 4u);
  EXPECT_EQ(BulkLanesFor(256 * kMiB, 1), 1u);
  EXPECT_EQ(BulkLanesFor(256 * kMiB, 0), 1u);  // none connected yet: lane 0
}

}  // namespace
}  // namespace tensord

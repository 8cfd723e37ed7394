// The shared-memory region's layout (server/shm_transfer.h): the nonce and
// mailbox page, the command ring after it, and the payload area a shared
// buffer has and a session's region does not.
#include <memory>

#include "gtest/gtest.h"
#include "server/shm_transfer.h"

namespace tensord {
namespace {

std::unique_ptr<ShmRegion> RegionWithRing(size_t ring_bytes) {
  auto region = ShmRegion::Create(1 << 20, false, ring_bytes);
  EXPECT_TRUE(region.ok()) << region.status();
  return *std::move(region);
}

TEST(ShmRegionTest, RingSitsBetweenTheMailboxPageAndThePayload) {
  auto region = RegionWithRing(64 << 10);
  const v1::ShmRegion d = region->Describe();
  EXPECT_EQ(d.ring_offset(), ShmRegion::kDataOffset);
  EXPECT_EQ(d.ring_bytes(), 64u << 10);
  EXPECT_EQ(d.data_offset(), 4096u + 4096u + (64u << 10));
  // The payload area starts after the ring: offsets inside it are refused.
  EXPECT_FALSE(region->Slice(8192, 16, "put").ok());
  EXPECT_TRUE(region->Slice(d.data_offset(), 16, "put").ok());
  EXPECT_FALSE(ShmRegion::Create(1 << 20, false, 5000).ok());  // not 2^k
  EXPECT_EQ(RegionWithRing(0)->Describe().ring_bytes(), 0u);
}

// A session's region: the first page and the ring, no payload at all.
TEST(ShmRegionTest, ASessionRegionHoldsNoPayload) {
  EXPECT_EQ(ShmRegion::BytesFor(0), 4096u);
  const size_t bytes = ShmRegion::BytesFor(64 << 10);
  EXPECT_EQ(bytes, 4096u + 4096u + (64u << 10));
  auto region = ShmRegion::Create(bytes, false, 64 << 10);
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_EQ((*region)->Describe().data_offset(), (*region)->size());
  EXPECT_FALSE((*region)->Slice(bytes, 1, "put").ok());
  EXPECT_TRUE((*region)->Slice(bytes, 0, "put").ok());
  EXPECT_FALSE(ShmRegion::Create(bytes - 1, false, 64 << 10).ok());
}

}  // namespace
}  // namespace tensord

// The Admin memory functions on a device with a staging cache made of host
// memory (the pinned allocator's logic is the same CachingAllocator): its
// own "pinned staging" entry, kept out of the device's figures, and
// empty_cache releasing both pools.
#include "server/admin_memory.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_device.h"
#include "runtime/testing/host_memory_gpu.h"

namespace tensord {
namespace {

// Host memory posing as a GPU with a staging cache of its own.
class StagingDevice : public testing::HostMemoryGpu {
 public:
  StagingDevice()
      : HostMemoryGpu("fake:0", MakeHostCachingAllocator("fake:0"),
                      MakeHostCachingAllocator("fake_host")) {}
};

std::string Name(uint64_t n) { return "s" + std::to_string(n); }

int64_t Stat(const v1::DeviceMemoryStats& d, const std::string& key) {
  const auto it = d.stats().find(key);
  return it == d.stats().end() ? -1 : it->second;
}

TEST(AdminMemoryTest, TheStagingCacheIsItsOwnPool) {
  StagingDevice device;
  auto block = device.allocator()->Allocate(1000, AllocContext{3, nullptr});
  ASSERT_TRUE(block.ok());
  const int64_t own_reserved =
      device.allocator()->GetStats().device.reserved_bytes[kAllPools].current;
  {
    auto staged = device.AllocateStaging(1 << 20);
    ASSERT_TRUE(staged.ok());
    v1::MemoryStatsResponse busy;
    AddMemoryStats(device, Name, &busy);
    ASSERT_EQ(busy.devices_size(), 2);
    EXPECT_EQ(Stat(busy.devices(1), "allocated_bytes.all.current"), 1 << 20);
  }  // the buffer goes back to the cache, which keeps its segment
  v1::MemoryStatsResponse out;
  AddMemoryStats(device, Name, &out);
  ASSERT_EQ(out.devices_size(), 2);
  const v1::DeviceMemoryStats& own = out.devices(0);
  const v1::DeviceMemoryStats& staging = out.devices(1);
  EXPECT_EQ(own.device(), "fake:0");
  EXPECT_EQ(own.pool(), "");
  EXPECT_EQ(own.session_bytes().at("s3"), 1024);
  EXPECT_EQ(Stat(own, "allocated_bytes.all.current"), 1024);
  EXPECT_EQ(staging.device(), "fake:0");
  EXPECT_EQ(staging.pool(), kStagingPool);
  EXPECT_TRUE(staging.session_bytes().empty());
  EXPECT_EQ(Stat(staging, "allocated_bytes.all.current"), 0);
  EXPECT_EQ(Stat(staging, "num_device_alloc"), 1);
  const int64_t cached = Stat(staging, "reserved_bytes.all.current");
  EXPECT_GE(cached, 1 << 20);
  // The device's own figures do not include the staging segment.
  EXPECT_EQ(Stat(own, "reserved_bytes.all.current"), own_reserved);

  v1::EmptyCacheResponse released;
  EmptyDeviceCaches(device, &released);
  EXPECT_EQ(released.released_staging_bytes(), static_cast<uint64_t>(cached));
  // The device's segment still holds the live block: only staging is freed.
  EXPECT_EQ(released.released_bytes(), static_cast<uint64_t>(cached));
  v1::MemoryStatsResponse after;
  AddMemoryStats(device, Name, &after);
  EXPECT_EQ(Stat(after.devices(1), "reserved_bytes.all.current"), 0);
  EXPECT_EQ(Stat(after.devices(1), "num_device_free"), 1);
  device.allocator()->Free(*block);
  v1::EmptyCacheResponse second;
  EmptyDeviceCaches(device, &second);
  EXPECT_GT(second.released_bytes(), 0u);
  EXPECT_EQ(second.released_staging_bytes(), 0u);
}

TEST(AdminMemoryTest, ADeviceWithoutStagingHasOneEntry) {
  auto cpu = MakeCpuDevice();
  v1::MemoryStatsResponse out;
  AddMemoryStats(*cpu, Name, &out);
  ASSERT_EQ(out.devices_size(), 1);
  EXPECT_EQ(out.devices(0).device(), "cpu");
  EXPECT_EQ(out.devices(0).pool(), "");
  v1::EmptyCacheResponse released;
  EmptyDeviceCaches(*cpu, &released);
  EXPECT_EQ(released.released_staging_bytes(), 0u);
}

TEST(AdminMemoryTest, SharedBuffersAreSummedApartFromThePools) {
  std::vector<v1::SessionInfo> sessions(3);
  sessions[0].set_session_id("s-a");
  sessions[0].set_shared_buffers(2);
  sessions[0].set_shared_buffer_bytes(3 << 20);
  sessions[1].set_session_id("s-none");  // holds none: left out
  sessions[2].set_session_id("s-b");
  sessions[2].set_shared_buffers(1);
  sessions[2].set_shared_buffer_bytes(4096);
  auto cpu = MakeCpuDevice();
  v1::MemoryStatsResponse out;
  AddMemoryStats(*cpu, Name, &out);
  SetSharedBufferStats(sessions, &out);
  ASSERT_EQ(out.devices_size(), 1);  // no pool of their own
  const v1::SharedBufferStats& shared = out.shared_buffers();
  EXPECT_EQ(shared.count(), 3u);
  EXPECT_EQ(shared.bytes(), (3u << 20) + 4096);
  EXPECT_EQ(shared.session_count().size(), 2u);
  EXPECT_EQ(shared.session_count().at("s-a"), 2u);
  EXPECT_EQ(shared.session_bytes().at("s-a"), 3u << 20);
  EXPECT_EQ(shared.session_count().at("s-b"), 1u);
  EXPECT_EQ(shared.session_bytes().at("s-b"), 4096u);
  // Set, not added: a second call reports the sessions as they are now.
  sessions.resize(1);
  SetSharedBufferStats(sessions, &out);
  EXPECT_EQ(out.shared_buffers().count(), 2u);
  EXPECT_EQ(out.shared_buffers().session_bytes().size(), 1u);
  SetSharedBufferStats({}, &out);
  EXPECT_TRUE(out.has_shared_buffers());  // reported, and empty
  EXPECT_EQ(out.shared_buffers().bytes(), 0u);
}

// Memory history (Note [Memory history]): on with PyTorch's default size,
// the state reported, the limit refused, off forgetting the events; the
// staging pool never records.
TEST(AdminMemoryTest, RecordMemoryHistoryTurnsTheDevicesHistoryOnAndOff) {
  StagingDevice device;
  v1::RecordMemoryHistoryRequest req;
  v1::RecordMemoryHistoryResponse state;
  ASSERT_TRUE(RecordMemoryHistory(device, req, &state).ok());
  ASSERT_EQ(state.devices_size(), 1);
  EXPECT_EQ(state.devices(0).device(), "fake:0");
  EXPECT_EQ(state.devices(0).max_entries(), 0u);  // off by default

  req.set_action(v1::RecordMemoryHistoryRequest::ON);
  v1::RecordMemoryHistoryResponse on;
  ASSERT_TRUE(RecordMemoryHistory(device, req, &on).ok());
  EXPECT_EQ(on.devices(0).max_entries(), kDefaultHistoryEntries);
  void* p = *device.allocator()->Allocate(100, AllocContext{3, nullptr});
  device.allocator()->Free(p);
  {
    auto staged = device.AllocateStaging(4096);
    ASSERT_TRUE(staged.ok());
  }
  EXPECT_FALSE(device.staging_allocator()->history().enabled());
  v1::RecordMemoryHistoryResponse now;
  ASSERT_TRUE(
      RecordMemoryHistory(device, v1::RecordMemoryHistoryRequest(), &now).ok());
  EXPECT_EQ(now.devices(0).events(), 4u);  // segment, alloc, two frees

  req.set_max_entries(kMaxHistoryEntries + 1);
  v1::RecordMemoryHistoryResponse refused;
  EXPECT_EQ(RecordMemoryHistory(device, req, &refused).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(device.allocator()->history().capacity(), kDefaultHistoryEntries);

  req.set_action(v1::RecordMemoryHistoryRequest::OFF);
  v1::RecordMemoryHistoryResponse off;
  ASSERT_TRUE(RecordMemoryHistory(device, req, &off).ok());
  EXPECT_EQ(off.devices(0).max_entries(), 0u);
  EXPECT_EQ(off.devices(0).events(), 0u);
}

}  // namespace
}  // namespace tensord

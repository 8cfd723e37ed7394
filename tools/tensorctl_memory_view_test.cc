#include "tools/tensorctl_memory_view.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tensord {
namespace tensorctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::DeviceMemoryStats SampleStats() {
  v1::DeviceMemoryStats d;
  d.set_device("cpu");
  auto& s = *d.mutable_stats();
  s["allocated_bytes.all.current"] = 3072;
  s["allocated_bytes.all.peak"] = 4096;
  s["allocated_bytes.all.allocated"] = 5120;
  s["allocated_bytes.all.freed"] = 2048;
  s["allocated_bytes.small_pool.current"] = 3072;
  s["reserved_bytes.all.current"] = 2 << 20;
  s["allocation.all.current"] = 3;
  s["segment.all.current"] = 1;
  s["num_alloc_retries"] = 2;
  s["num_ooms"] = 1;
  s["num_device_alloc"] = 4;
  s["num_device_free"] = 3;
  s["largest_free_block_bytes"] = 1 << 20;
  s["cached_free_bytes"] = (2 << 20) - 3072;
  s["fragmentation_ppm"] = 499268;
  s["capacity_bytes"] = 0;
  s["session.7.allocated_bytes"] = 2048;
  (*d.mutable_session_bytes())["s-alice"] = 2048;
  (*d.mutable_session_bytes())["#9"] = 1024;
  return d;
}

v1::ListSessionsResponse SampleSessions() {
  v1::ListSessionsResponse r;
  v1::SessionInfo* s = r.add_sessions();
  s->set_session_id("s-alice");
  s->set_user("alice");
  s->set_client_name("train.py");
  return r;
}

TEST(MemorySummaryTest, TableCountersAndSessions) {
  const std::string text = FormatMemorySummary(SampleStats(), SampleSessions());
  EXPECT_EQ(text.rfind("memory summary: cpu\n===================\n", 0), 0u)
      << text;
  // current / peak / total alloc / total freed, aligned right.
  EXPECT_THAT(text, HasSubstr("Allocated memory       3.0 KiB  4.0 KiB"
                              "      5.0 KiB      2.0 KiB\n"));
  EXPECT_THAT(text, HasSubstr("  from small pool      3.0 KiB"));
  EXPECT_THAT(text, HasSubstr("Reserved memory        2.0 MiB"));
  EXPECT_THAT(text, HasSubstr("Allocations                  3"));
  EXPECT_THAT(text, HasSubstr("Reserved segments            1"));
  EXPECT_THAT(text, HasSubstr("Non-releasable memory"));
  EXPECT_THAT(text, HasSubstr("num_alloc_retries           2\n"));
  EXPECT_THAT(text, HasSubstr("num_ooms                    1\n"));
  EXPECT_THAT(text, HasSubstr("largest free block    1.0 MiB\n"));
  EXPECT_THAT(text, HasSubstr("fragmentation           49.9%\n"));
  EXPECT_THAT(text, HasSubstr("capacity                    -\n"));
  // Sessions, largest first; an ended session has no user.
  EXPECT_THAT(text, HasSubstr("SESSION  USER   CLIENT    ALLOCATED  SHARE\n"
                              "s-alice  alice  train.py    2.0 KiB  66.7%\n"
                              "#9       -      -           1.0 KiB  33.3%\n"));
  EXPECT_THAT(text, Not(HasSubstr("session.7")));  // raw keys: --json only
}

TEST(MemorySummaryTest, NoSessions) {
  v1::DeviceMemoryStats d;
  d.set_device("cuda:0");
  const std::string text = FormatMemorySummary(d, {});
  EXPECT_THAT(text, HasSubstr("Allocated memory           0 B"));
  EXPECT_THAT(text, HasSubstr("no session holds memory on cuda:0\n"));
}

TEST(MemorySummaryTest, JsonHasRawStatsAndNamedSessions) {
  v1::MemoryStatsResponse stats;
  *stats.add_devices() = SampleStats();
  const std::string json = MemoryStatsJson(stats, SampleSessions());
  EXPECT_EQ(json.rfind("{\"devices\":[{\"device\":\"cpu\",\"stats\":{", 0), 0u);
  EXPECT_THAT(json, HasSubstr("\"allocated_bytes.all.current\":3072,"));
  EXPECT_THAT(json, HasSubstr("\"session.7.allocated_bytes\":2048"));
  EXPECT_THAT(json,
              HasSubstr("\"sessions\":[{\"session_id\":\"s-alice\",\"user\":"
                        "\"alice\",\"client_name\":\"train.py\","
                        "\"allocated_bytes\":2048},{\"session_id\":\"#9\","
                        "\"user\":\"\",\"client_name\":\"\","
                        "\"allocated_bytes\":1024}]}]}"));
}

TEST(MemorySummaryTest, TheStagingPoolIsNamedAndOwnedByNoSession) {
  v1::DeviceMemoryStats d;
  d.set_device("cuda:0");
  d.set_pool("pinned staging");
  (*d.mutable_stats())["reserved_bytes.all.current"] = 2 << 20;
  EXPECT_EQ(PoolLabel(d), "cuda:0 pinned staging");
  const std::string text = FormatMemorySummary(d, {});
  EXPECT_EQ(text.rfind("memory summary: cuda:0 pinned staging\n", 0), 0u)
      << text;
  EXPECT_THAT(text, HasSubstr("Reserved memory        2.0 MiB"));
  EXPECT_THAT(text, HasSubstr("no session owns them\n"));
  EXPECT_THAT(text, Not(HasSubstr("no session holds memory")));
  v1::MemoryStatsResponse stats;
  *stats.add_devices() = d;
  EXPECT_EQ(MemoryStatsJson(stats, {}).rfind(
                "{\"devices\":[{\"device\":\"cuda:0\",\"pool\":"
                "\"pinned staging\",\"stats\":{",
                0),
            0u);
}

v1::SharedBufferStats SampleShared() {
  v1::SharedBufferStats shared;
  shared.set_count(3);
  shared.set_bytes(4 << 20);
  (*shared.mutable_session_count())["#9"] = 1;
  (*shared.mutable_session_bytes())["#9"] = 1 << 20;
  (*shared.mutable_session_count())["s-alice"] = 2;
  (*shared.mutable_session_bytes())["s-alice"] = 3 << 20;
  return shared;
}

TEST(SharedBuffersViewTest, TotalsThenSessionsLargestFirst) {
  const std::string text =
      FormatSharedBuffers(SampleShared(), SampleSessions());
  EXPECT_EQ(text,
            "shared buffers (host memory)\n"
            "============================\n"
            "buffers        3\n"
            "bytes    4.0 MiB\n"
            "mapped by clients and the daemon (AllocateShared); in the users' "
            "cpu quota, in no pool above\n"
            "SESSION  USER   CLIENT    BUFFERS    BYTES  SHARE\n"
            "s-alice  alice  train.py        2  3.0 MiB  75.0%\n"
            "#9       -      -               1  1.0 MiB  25.0%\n");
  EXPECT_THAT(FormatSharedBuffers({}, {}),
              HasSubstr("buffers    0\nbytes    0 B\nmapped by clients"));
  EXPECT_THAT(FormatSharedBuffers({}, {}),
              HasSubstr("\nno session holds shared buffers\n"));
}

TEST(SharedBuffersViewTest, JsonAfterTheDevicesOnlyWhenReported) {
  v1::MemoryStatsResponse stats;
  *stats.add_devices() = SampleStats();
  EXPECT_THAT(MemoryStatsJson(stats, SampleSessions()),
              Not(HasSubstr("shared_buffers")));
  *stats.mutable_shared_buffers() = SampleShared();
  const std::string json = MemoryStatsJson(stats, SampleSessions());
  EXPECT_THAT(json,
              HasSubstr("\"allocated_bytes\":1024}]}],\"shared_buffers\":{"
                        "\"count\":3,\"bytes\":4194304,\"sessions\":[{"
                        "\"session_id\":\"s-alice\",\"user\":\"alice\","
                        "\"client_name\":\"train.py\",\"buffers\":2,"
                        "\"bytes\":3145728},{\"session_id\":\"#9\",\"user\":"
                        "\"\",\"client_name\":\"\",\"buffers\":1,\"bytes\":"
                        "1048576}]}}"));
}

v1::MemorySnapshotResponse SampleSnapshot() {
  v1::MemorySnapshotResponse r;
  r.set_device("cpu");
  v1::MemorySegment* s = r.add_segments();
  s->set_address(0x1000);
  s->set_total_size(2048);
  s->set_allocated_size(512);
  s->set_active_size(1024);
  s->set_requested_size(600);
  s->set_segment_type("small");
  auto add = [&](uint64_t address, uint64_t size, const char* state,
                 const char* session, uint64_t requested) {
    v1::MemoryBlock* b = s->add_blocks();
    b->set_address(address);
    b->set_size(size);
    b->set_state(state);
    b->set_session_id(session);
    b->set_requested_size(requested);
  };
  add(0x1000, 512, "active_allocated", "s-alice", 100);
  add(0x1200, 512, "active_pending_free", "s-bob", 500);
  add(0x1400, 1024, "inactive", "", 0);
  return r;
}

TEST(SegmentsTest, MapLinePerSegmentAndBlock) {
  const std::string text = FormatSegments(SampleSnapshot(), 8);
  EXPECT_EQ(text,
            "segments on cpu: 1, 2.0 KiB reserved, 512 B allocated   "
            "(# allocated  + pending free  . free)\n"
            "\n"
            "0x1000  small    2.0 KiB  [##++....]  3 blocks, 512 B allocated\n"
            "  0x1000      512 B  active_allocated     s-alice  (requested "
            "100 B)\n"
            "  0x1200      512 B  active_pending_free  s-bob  (requested "
            "500 B)\n"
            "  0x1400    1.0 KiB  inactive\n");
}

TEST(SegmentsTest, Json) {
  const std::string json = SegmentsJson(SampleSnapshot());
  EXPECT_EQ(json.rfind("{\"device\":\"cpu\",\"segments\":[{\"address\":4096,"
                       "\"total_size\":2048,\"allocated_size\":512,",
                       0),
            0u)
      << json;
  EXPECT_THAT(json, HasSubstr("{\"address\":4096,\"size\":512,"
                              "\"requested_size\":100,\"state\":"
                              "\"active_allocated\",\"session_id\":"
                              "\"s-alice\"}"));
  EXPECT_THAT(json, HasSubstr("\"session_id\":\"\"}]}]}"));
}

}  // namespace
}  // namespace tensorctl
}  // namespace tensord

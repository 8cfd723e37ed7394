#include "tools/tensorctl_top_view.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tensord {
namespace tensorctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TopFrame SampleFrame() {
  TopFrame f;
  f.address = "127.0.0.1:5005";
  f.time = absl::FromUnixSeconds(0);
  f.info.set_version("0.3.0");
  f.info.set_uptime_seconds(125);
  f.info.set_active_sessions(2);
  for (const char* name : {"cpu", "cuda:0"}) {
    v1::DeviceMemoryStats* d = f.memory.add_devices();
    d->set_device(name);
    (*d->mutable_stats())["allocated_bytes.all.current"] = 3 << 20;
    (*d->mutable_stats())["allocated_bytes.all.peak"] = 4 << 20;
    (*d->mutable_stats())["reserved_bytes.all.current"] = 20 << 20;
    (*d->mutable_stats())["segment.all.current"] = 1;
    (*d->mutable_stats())["fragmentation_ppm"] = 250000;
  }
  (*f.memory.mutable_devices(1)->mutable_stats())["capacity_bytes"] =
      int64_t{80} << 30;
  v1::SessionInfo* small = f.sessions.add_sessions();
  small->set_session_id("s-bob");
  small->set_user("bob");
  small->set_state("detached");
  (*small->mutable_memory_bytes())["cpu"] = 512;
  v1::SessionInfo* big = f.sessions.add_sessions();
  big->set_session_id("s-alice");
  big->set_user("alice");
  big->set_client_name("train.py");
  big->set_state("active");
  big->set_live_handles(12);
  big->set_ops_run(340);
  big->set_queue_depth(2);
  (*big->mutable_memory_bytes())["cpu"] = 1024;
  (*big->mutable_memory_bytes())["cuda:0"] = 3 << 20;
  return f;
}

TEST(TopViewTest, DevicesThenSessionsLargestFirst) {
  const std::string text = FormatTopFrame(SampleFrame());
  EXPECT_THAT(text, HasSubstr("tensord 0.3.0 at 127.0.0.1:5005  up 2m5s  "
                              "2 sessions  "));
  EXPECT_THAT(text, HasSubstr("DEVICE  ALLOCATED     PEAK  RESERVED  CAPACITY  "
                              "SEGMENTS   FRAG  OOMS\n"
                              "cpu       3.0 MiB  4.0 MiB    20 MiB         -  "
                              "       1  25.0%     0\n"
                              "cuda:0    3.0 MiB  4.0 MiB    20 MiB    80 GiB  "
                              "       1  25.0%     0\n"));
  EXPECT_THAT(text,
              HasSubstr("SESSION  USER   CLIENT    STATE     HANDLES  OPS  "
                        "QUEUE      CPU   CUDA:0\n"
                        "s-alice  alice  train.py  active         12  340  "
                        "    2  1.0 KiB  3.0 MiB\n"
                        "s-bob    bob    -         detached        0    0  "
                        "    0    512 B        -\n"));
  EXPECT_EQ(text.find('\033'), std::string::npos);  // the caller clears
}

TEST(TopViewTest, TheStagingPoolIsARowButNoSessionColumn) {
  TopFrame f = SampleFrame();
  v1::DeviceMemoryStats* staging = f.memory.add_devices();
  staging->set_device("cuda:0");
  staging->set_pool("pinned staging");
  (*staging->mutable_stats())["reserved_bytes.all.current"] = 2 << 20;
  const std::string text = FormatTopFrame(f);
  EXPECT_THAT(text, HasSubstr("\ncuda:0 pinned staging "));
  EXPECT_THAT(text, HasSubstr("QUEUE      CPU   CUDA:0\n"));
  EXPECT_THAT(TopFrameJson(f),
              HasSubstr("{\"device\":\"cuda:0\",\"pool\":\"pinned staging\","));
}

TEST(TopViewTest, SharedBuffersALineAndASessionColumn) {
  TopFrame f = SampleFrame();
  f.memory.mutable_shared_buffers()->set_count(2);
  f.memory.mutable_shared_buffers()->set_bytes(8 << 20);
  v1::SessionInfo* bob = f.sessions.mutable_sessions(0);
  bob->set_shared_buffers(2);
  bob->set_shared_buffer_bytes(8 << 20);
  const std::string text = FormatTopFrame(f);
  EXPECT_THAT(text, HasSubstr("       1  25.0%     0\n"
                              "shared buffers: 2 (8.0 MiB, host memory in the "
                              "cpu quota)\n\n"));
  // bob's shared bytes put him first now.
  EXPECT_THAT(text,
              HasSubstr("QUEUE      CPU   CUDA:0   SHARED\n"
                        "s-bob    bob    -         detached        0    0  "
                        "    0    512 B        -  8.0 MiB\n"
                        "s-alice  alice  train.py  active         12  340  "
                        "    2  1.0 KiB  3.0 MiB        -\n"));
  const std::string json = TopFrameJson(f);
  EXPECT_THAT(json, HasSubstr("}],\"shared_buffers\":{\"count\":2,"
                              "\"bytes\":8388608},\"sessions\":[{"
                              "\"session_id\":\"s-bob\","));
  EXPECT_THAT(json, HasSubstr("\"memory_bytes\":{\"cpu\":512},"
                              "\"shared_buffers\":2,"
                              "\"shared_buffer_bytes\":8388608}"));
  // A daemon that does not report them: neither line nor column.
  EXPECT_THAT(FormatTopFrame(SampleFrame()), Not(HasSubstr("SHARED")));
  EXPECT_THAT(TopFrameJson(SampleFrame()),
              Not(HasSubstr("\"shared_buffers\":{")));
}

TEST(TopViewTest, NoSessions) {
  TopFrame f = SampleFrame();
  f.sessions.Clear();
  EXPECT_THAT(FormatTopFrame(f), HasSubstr("no sessions\n"));
}

TEST(TopViewTest, JsonFrame) {
  const std::string json = TopFrameJson(SampleFrame());
  EXPECT_EQ(json.rfind("{\"time\":\"1970-01-01T00:00:00+00:00\","
                       "\"address\":\"127.0.0.1:5005\",\"version\":\"0.3.0\","
                       "\"uptime_seconds\":125,\"devices\":[{\"device\":"
                       "\"cpu\",\"allocated_bytes\":3145728,",
                       0),
            0u)
      << json;
  EXPECT_THAT(json, HasSubstr("\"fragmentation\":0.25,"));
  EXPECT_THAT(json, HasSubstr("\"sessions\":[{\"session_id\":\"s-alice\","));
  EXPECT_THAT(json, HasSubstr("\"memory_bytes\":{\"cpu\":1024,"
                              "\"cuda:0\":3145728},\"shared_buffers\":0,"
                              "\"shared_buffer_bytes\":0}"));
}

}  // namespace
}  // namespace tensorctl
}  // namespace tensord

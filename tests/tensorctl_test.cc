// End to end: the real tensorctl binary against the real tensord, with
// tensors created by the C++ client (tensorctl_fixture.h). The memory
// commands: each runs through popen as an operator would, and its text and
// --json output are checked for the numbers the allocator must report. The
// session views (top, sessions, shared buffers, profile) are
// tensorctl_sessions_test.cc's.
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/tensord_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tensorctl_fixture.h"

namespace tensord {
namespace {

using testing::BalancedJson;
using testing::CtlResult;
using ::testing::HasSubstr;
using testing::JsonNumber;
using ::testing::StartsWith;
using testing::TensorctlTest;

constexpr int64_t kMiB = 1 << 20;

TEST_F(TensorctlTest, HelpListsTheMemoryCommands) {
  const CtlResult r = Ctl("help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* name :
       {"memory", "segments", "snapshot", "empty-cache", "top"}) {
    EXPECT_THAT(r.output, HasSubstr(absl::StrCat("  ", name, " "))) << name;
  }
}

TEST_F(TensorctlTest, MemorySummaryShowsBytesAndSessions) {
  auto c = Connect("memory-test");
  Tensor small = Floats(*c, 1024);      // 4 KiB: small pool
  Tensor large = Floats(*c, 3 * kMiB);  // 12 MiB: large pool
  const CtlResult text = Ctl("memory --device=cpu");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, StartsWith("memory summary: cpu\n"));
  EXPECT_THAT(text.output, HasSubstr("Allocated memory"));
  EXPECT_THAT(text.output, HasSubstr("  from large pool"));
  EXPECT_THAT(text.output, HasSubstr("num_device_alloc"));
  EXPECT_THAT(text.output, HasSubstr("fragmentation"));
  EXPECT_THAT(text.output, HasSubstr(c->session_id()));
  EXPECT_THAT(text.output, HasSubstr("memory-test"));  // joined from sessions

  const CtlResult json = Ctl("memory --device=cpu --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_TRUE(BalancedJson(json.output)) << json.output;
  EXPECT_GE(JsonNumber(json.output, "allocated_bytes.all.current"),
            12 * kMiB + 4096);
  EXPECT_GE(JsonNumber(json.output, "allocated_bytes.small_pool.current"),
            4096);
  EXPECT_GE(JsonNumber(json.output, "reserved_bytes.all.current"), 12 * kMiB);
  EXPECT_THAT(json.output,
              HasSubstr(absl::StrCat("{\"session_id\":\"", c->session_id(),
                                     "\",\"user\":")));
  // This session's share is at least what it uploaded.
  const std::regex mine("\"" + c->session_id() +
                        "\"[^}]*\"allocated_bytes\":([0-9]+)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(json.output, m, mine)) << json.output;
  EXPECT_GE(std::stoll(m[1]), 12 * kMiB + 4096);

  const CtlResult missing = Ctl("memory --device=nope");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("no device 'nope'"));
}

TEST_F(TensorctlTest, SegmentsMapBlocksToSessions) {
  auto c = Connect("segments-test");
  Tensor t = Floats(*c, 256);  // 1 KiB
  const CtlResult text = Ctl("segments --device=cpu");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, StartsWith("segments on cpu: "));
  EXPECT_THAT(text.output, HasSubstr("active_allocated"));
  EXPECT_THAT(text.output, HasSubstr("#"));
  EXPECT_THAT(text.output, HasSubstr(absl::StrCat(c->session_id(),
                                                  "  (requested 1.0 KiB)")));

  const CtlResult json = Ctl("segments --device=cpu --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_TRUE(BalancedJson(json.output)) << json.output;
  EXPECT_THAT(json.output, StartsWith("{\"device\":\"cpu\",\"segments\":[{"));
  EXPECT_THAT(json.output,
              HasSubstr(absl::StrCat("\"requested_size\":1024,\"state\":"
                                     "\"active_allocated\",\"session_id\":\"",
                                     c->session_id(), "\"")));
}

TEST_F(TensorctlTest, SnapshotWritesTorchShapedJson) {
  auto c = Connect("snapshot-test");
  Tensor t = Floats(*c, 1024);
  const std::string path = ::testing::TempDir() + "/snapshot.json";
  const CtlResult r = Ctl(absl::StrCat("snapshot --device=cpu -o ", path));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("wrote the snapshot of cpu (")));
  EXPECT_THAT(r.output, HasSubstr(path));
  std::stringstream file;
  file << std::ifstream(path).rdbuf();
  const std::string json = file.str();
  EXPECT_TRUE(BalancedJson(json)) << json.substr(0, 200);
  EXPECT_THAT(json, StartsWith("{\"segments\":[{"));
  EXPECT_THAT(json, HasSubstr("\"device_traces\":"));
  EXPECT_THAT(json, HasSubstr("\"state\":\"active_allocated\""));

  const CtlResult j = Ctl(absl::StrCat("snapshot -o=", path, " --json"));
  ASSERT_EQ(j.exit_code, 0) << j.output;
  EXPECT_TRUE(BalancedJson(j.output)) << j.output;
  EXPECT_GT(JsonNumber(j.output, "segments"), 0);

  const CtlResult missing = Ctl("snapshot");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("snapshot -o FILE"));
}

TEST_F(TensorctlTest, EmptyCacheReleasesFreedSegments) {
  auto c = Connect("empty-cache-test");
  // 16 MiB is over the 10 MiB large-pool threshold: its own segment.
  std::optional<Tensor> big = Floats(*c, 4 * kMiB);
  const int64_t reserved_before = CpuStat("reserved_bytes.all.current");
  ASSERT_GE(reserved_before, 16 * kMiB);
  big.reset();  // queues the Release; synchronize makes the daemon apply it
  ASSERT_TRUE(c->synchronize().ok());

  const CtlResult r = Ctl("empty-cache --device=cpu --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, StartsWith("{\"device\":\"cpu\",\"released_bytes\":"));
  EXPECT_GE(JsonNumber(r.output, "released_bytes"), 16 * kMiB);
  EXPECT_LE(CpuStat("reserved_bytes.all.current"), reserved_before - 16 * kMiB);

  const CtlResult again = Ctl("empty-cache --device=cpu");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, StartsWith("released "));
  EXPECT_THAT(again.output, HasSubstr(" bytes) from cpu\n"));
}

}  // namespace
}  // namespace tensord

// End to end: the real tensorctl binary against the real tensord, with
// sessions opened by the C++ client (tensorctl_fixture.h). The views of
// sessions: top, each session's transfer paths, the shared buffers per
// session, and a session's profile and trace. The memory commands are
// tensorctl_test.cc's.
#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/tensord_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tensorctl_fixture.h"

namespace tensord {
namespace {

using testing::BalancedJson;
using ::testing::ContainsRegex;
using testing::CtlResult;
using ::testing::HasSubstr;
using testing::JsonNumber;
using ::testing::Not;
using ::testing::StartsWith;
using testing::TensorctlTest;

constexpr int64_t kMiB = 1 << 20;

TEST_F(TensorctlTest, TopShowsSessionsAndDevices) {
  auto c = Connect("top-test");
  Tensor t = Floats(*c, 1024);
  const CtlResult text = Ctl("top --iterations=1");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, StartsWith("tensord "));
  EXPECT_THAT(text.output, HasSubstr(daemon_->address()));
  EXPECT_THAT(text.output, ContainsRegex("DEVICE +ALLOCATED"));
  EXPECT_THAT(text.output, HasSubstr("SESSION"));
  EXPECT_THAT(text.output, HasSubstr(c->session_id()));
  EXPECT_THAT(text.output, HasSubstr("top-test"));
  EXPECT_THAT(text.output, Not(HasSubstr("\033[")));  // a pipe: no repaint

  const CtlResult json = Ctl("top --iterations=2 --interval=10ms --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  std::istringstream lines(json.output);
  std::string line;
  int frames = 0;
  while (std::getline(lines, line)) {
    ++frames;
    EXPECT_TRUE(BalancedJson(line)) << line;
    EXPECT_THAT(line, StartsWith("{\"time\":"));
    EXPECT_THAT(line, HasSubstr(absl::StrCat("\"session_id\":\"",
                                             c->session_id(), "\"")));
    EXPECT_GT(JsonNumber(line, "allocated_bytes"), 0);
  }
  EXPECT_EQ(frames, 2);

  EXPECT_EQ(Ctl("top --iterations=-1").exit_code, 1);
}

// The first `"key":NUMBER` after session `id`'s "session_id" in `json`, or -1.
int64_t SessionNumber(const std::string& json, const std::string& id,
                      const std::string& key) {
  const size_t at = json.find(absl::StrCat("\"session_id\":\"", id, "\""));
  return at == std::string::npos ? -1 : JsonNumber(json.substr(at), key);
}

// The paths a session moves bytes on besides its stream (SessionInfo.paths):
// a same-host session's region and cross-memory attach; a session without a
// region gets the bulk socket once its first big upload attached it.
TEST_F(TensorctlTest, SessionsShowTheirTransferPaths) {
  auto local = Connect("paths-local");
  auto remote = Connect("paths-remote", ClientOptions::ShmMode::kOff);
  auto idle = Connect("paths-idle", ClientOptions::ShmMode::kOff);
  const auto path_list = [](const std::string& json, const std::string& id) {
    const size_t at = json.find(absl::StrCat("\"session_id\":\"", id, "\""));
    if (at == std::string::npos) return std::string("(no session)");
    const size_t from = json.find("\"paths\":", at);
    return json.substr(from, json.find(']', from) + 1 - from);
  };
  CtlResult json = Ctl("sessions --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_EQ(path_list(json.output, local->session_id()),
            "\"paths\":[\"shm\",\"cma\"]");
  EXPECT_EQ(path_list(json.output, remote->session_id()), "\"paths\":[]");
  Tensor big = Floats(*remote, 512 * 1024);  // 2 MiB: on the bulk socket
  ASSERT_TRUE(remote->bulk_active());
  json = Ctl("sessions --json");
  EXPECT_EQ(path_list(json.output, remote->session_id()),
            "\"paths\":[\"bulk\"]");
  // Its lanes (the daemon's default 4; the client connects them all).
  EXPECT_THAT(json.output, HasSubstr("\"bulk_lanes\":4"));
  EXPECT_EQ(path_list(json.output, idle->session_id()), "\"paths\":[]");
  const std::string text = Ctl("sessions").output;
  EXPECT_THAT(text, HasSubstr("PATHS"));
  EXPECT_THAT(text, HasSubstr("shm,cma"));
  EXPECT_THAT(text, HasSubstr("bulk:4"));
  EXPECT_THAT(text, HasSubstr("stream"));
}

TEST_F(TensorctlTest, SharedBuffersShowPerSessionAndApartFromThePools) {
  auto c = Connect("shared-test");
  const std::string id = c->session_id();
  absl::StatusOr<SharedBuffer> big = c->AllocateShared(3 * kMiB);
  ASSERT_TRUE(big.ok()) << big.status();
  ASSERT_TRUE(big->shared());  // loopback: the daemon shares memory
  absl::StatusOr<SharedBuffer> small = c->AllocateShared(kMiB);
  ASSERT_TRUE(small.ok()) << small.status();
  const int64_t cpu_allocated = CpuStat("allocated_bytes.all.current");

  const CtlResult sessions = Ctl("sessions --json");
  ASSERT_EQ(sessions.exit_code, 0) << sessions.output;
  EXPECT_EQ(SessionNumber(sessions.output, id, "shared_buffers"), 2);
  EXPECT_EQ(SessionNumber(sessions.output, id, "shared_buffer_bytes"),
            4 * kMiB);
  EXPECT_THAT(Ctl("sessions").output, HasSubstr("  2 (4.0 MiB)"));

  const CtlResult json = Ctl("memory --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_TRUE(BalancedJson(json.output)) << json.output;
  EXPECT_THAT(json.output,
              HasSubstr(absl::StrCat(
                  "\"shared_buffers\":{\"count\":2,\"bytes\":", 4 * kMiB,
                  ",\"sessions\":[{\"session_id\":\"", id, "\",")));
  EXPECT_THAT(json.output,
              HasSubstr(absl::StrCat("\"client_name\":\"shared-test\","
                                     "\"buffers\":2,\"bytes\":",
                                     4 * kMiB, "}]}}")));
  // Not the cpu allocator's memory: its figures did not move.
  EXPECT_EQ(JsonNumber(json.output, "allocated_bytes.all.current"),
            cpu_allocated);
  const CtlResult text = Ctl("memory --device=cpu");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  const size_t section = text.output.find("\nshared buffers (host memory)\n");
  ASSERT_NE(section, std::string::npos) << text.output;
  EXPECT_THAT(text.output.substr(section), HasSubstr(absl::StrCat(id, "  ")));
  EXPECT_THAT(Ctl("top --iterations=1").output,
              HasSubstr("shared buffers: 2 (4.0 MiB, "));

  *small = SharedBuffer();  // a batched Release, applied by the sync
  ASSERT_TRUE(c->synchronize().ok());
  const CtlResult freed = Ctl("sessions --json");
  EXPECT_EQ(SessionNumber(freed.output, id, "shared_buffers"), 1);
  EXPECT_EQ(SessionNumber(freed.output, id, "shared_buffer_bytes"), 3 * kMiB);
  EXPECT_EQ(JsonNumber(Ctl("memory --json").output, "count"), 1);

  c.reset();  // the session's end frees the rest (its buffer outlives it)
  const CtlResult ended = Ctl("memory --json");
  EXPECT_THAT(ended.output, HasSubstr("\"shared_buffers\":{\"count\":0,"
                                      "\"bytes\":0,\"sessions\":[]}"));
  EXPECT_THAT(Ctl("memory --device=cpu").output,
              HasSubstr("no session holds shared buffers\n"));
}

TEST_F(TensorctlTest, ProfileShowsPhasesPerOpAndWritesATrace) {
  auto c = Connect("profile-test");
  Tensor a = Floats(*c, 128 * 128).reshape({128, 128});
  const std::string trace = absl::StrCat(std::getenv("TEST_TMPDIR"), "/t.json");
  // The session keeps computing until tensorctl's window has closed, so
  // its ops overlap the window whatever the machine's load.
  std::atomic<bool> finished{false};
  CtlResult text;
  std::thread ctl([&] {
    text = Ctl(absl::StrCat("profile ", c->session_id(),
                            " --duration=300ms -o ", trace));
    finished = true;
  });
  while (!finished) {
    Tensor m = matmul(a, a).relu();
    ASSERT_TRUE(c->synchronize().ok());
  }
  ctl.join();
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, HasSubstr("KERNEL"));
  EXPECT_THAT(text.output, HasSubstr("matmul"));
  EXPECT_THAT(text.output, HasSubstr("relu"));
  EXPECT_THAT(text.output, HasSubstr("time in ops"));
  EXPECT_THAT(text.output, HasSubstr("trace written to " + trace));
  std::ifstream file(trace);
  const std::string json((std::istreambuf_iterator<char>(file)),
                         std::istreambuf_iterator<char>());
  EXPECT_TRUE(BalancedJson(json)) << json.substr(0, 200);
  EXPECT_THAT(json, HasSubstr("\"traceEvents\""));
  EXPECT_THAT(json, HasSubstr("\"name\":\"matmul\",\"cat\":\"op\""));
  EXPECT_THAT(json, HasSubstr("\"name\":\"kernel\",\"cat\":\"phase\""));

  // Stopped: later ops are not recorded (FETCH from the admin side).
  Tensor after = matmul(a, a);
  ASSERT_TRUE(c->synchronize().ok());
  const CtlResult again =
      Ctl(absl::StrCat("profile ", c->session_id(), " --duration=0s --json"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, StartsWith("{\"ops\":[]"));

  const CtlResult missing = Ctl("profile no-such-session --duration=0s");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("no session 'no-such-session'"));
}

}  // namespace
}  // namespace tensord

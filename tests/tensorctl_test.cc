// End to end: the real tensorctl binary against the real tensord, with
// tensors created by the C++ client. Each command runs through popen as an
// operator would, and its text and --json output are checked for the
// numbers the allocator must report.
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/tensord_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"

namespace tensord {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr int64_t kMiB = 1 << 20;

struct CtlResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

std::string TensorctlPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir && workspace) {
    return absl::StrCat(srcdir, "/", workspace, "/tools/tensorctl");
  }
  return "bazel-bin/tools/tensorctl";
}

// The value of the first `"key":NUMBER` in `json`, or -1.
int64_t JsonNumber(const std::string& json, const std::string& key) {
  const std::regex re("\"" + std::regex_replace(key, std::regex("\\."), "\\.") +
                      "\":(-?[0-9]+)");
  std::smatch m;
  return std::regex_search(json, m, re) ? std::stoll(m[1]) : -1;
}

// Brackets and braces balance outside strings and the text is one value:
// enough to catch truncated or interleaved output without a JSON library.
bool BalancedJson(const std::string& text) {
  std::string stack;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      stack.push_back(c == '{' ? '}' : ']');
    } else if (c == '}' || c == ']') {
      if (stack.empty() || stack.back() != c) return false;
      stack.pop_back();
      if (stack.empty() &&
          text.find_first_not_of(" \n", i + 1) != std::string::npos) {
        return false;
      }
    }
  }
  return !in_string && stack.empty() && !text.empty() && text[0] == '{';
}

class TensorctlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto d = testing::DaemonProcess::Start();
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  std::unique_ptr<Client> Connect(
      const std::string& name,
      ClientOptions::ShmMode shm = ClientOptions::ShmMode::kAuto) {
    ClientOptions options;
    options.address = daemon_->address();
    options.client_name = name;
    options.shm = shm;
    auto c = Client::Connect(options);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  // `n` float32 zeros on the cpu device, uploaded and synchronized.
  static Tensor Floats(Client& c, int64_t n) {
    UploadOptions options;
    options.device = "cpu";
    Tensor t = c.FromVector<float>(std::vector<float>(n), {n}, options);
    EXPECT_TRUE(c.synchronize().ok());
    return t;
  }

  static CtlResult Ctl(const std::string& args) {
    const std::string command = absl::StrCat(
        TensorctlPath(), " --server=", daemon_->address(), " ", args, " 2>&1");
    CtlResult result;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return result;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0)
      result.output.append(buf, n);
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
  }

  static int64_t CpuStat(const std::string& key) {
    const CtlResult r = Ctl("memory --device=cpu --json");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return JsonNumber(r.output, key);
  }

  static testing::DaemonProcess* daemon_;
};
testing::DaemonProcess* TensorctlTest::daemon_ = nullptr;

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

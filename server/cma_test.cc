// Cross-memory attach against a real second process: a forked child holds
// the probe nonce and the bytes (at the parent's addresses, as fork copies
// them), and the daemon side reads and writes its memory. Checks the copies
// (one syscall and split over the pool), the refusals (the daemon itself,
// a probe without the nonce, no such process), unmapped ranges, and Put and
// Get through a CommandRunner, values compared with the child's memory.
#include "server/cma.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/command_runner.h"
#include "server/session_test_fixture.h"

namespace tensord {
namespace {

constexpr char kNonce[] = "0123456789abcdef";
constexpr size_t kFloats = (size_t{5} << 20) / sizeof(float);  // split path

// A child process that holds `probe`, `src` and `dst` as they were at fork
// and waits to be killed.
class Child {
 public:
  Child() : src_(kFloats), dst_(kFloats, 0.0f) {
    std::memcpy(probe_, kNonce, sizeof(probe_));
    std::iota(src_.begin(), src_.end(), 0.5f);
    pid_ = fork();
    if (pid_ == 0) {
      for (;;) pause();
    }
  }
  ~Child() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  uint64_t pid() const { return static_cast<uint64_t>(pid_); }
  uint64_t probe() const { return reinterpret_cast<uint64_t>(probe_); }
  uint64_t src() const { return reinterpret_cast<uint64_t>(src_.data()); }
  uint64_t dst() const { return reinterpret_cast<uint64_t>(dst_.data()); }
  const std::vector<float>& values() const { return src_; }

 private:
  char probe_[16];
  std::vector<float> src_;
  std::vector<float> dst_;
  pid_t pid_ = 0;
};

std::string Nonce() { return std::string(kNonce, 16); }

TEST(CmaPeerTest, CopiesBothWaysWithTheChild) {
  Child child;
  CmaPeer peer(child.pid(), child.probe(), Nonce());
  const size_t bytes = kFloats * sizeof(float);
  std::vector<float> got(kFloats, -1.0f);
  ASSERT_TRUE(peer.Read(child.src(), got.data(), bytes, "read").ok());
  EXPECT_EQ(got, child.values());
  // Write a reversed copy into the child's dst and read it back.
  std::vector<float> reversed(child.values().rbegin(), child.values().rend());
  ASSERT_TRUE(peer.Write(child.dst(), reversed.data(), bytes, "write").ok());
  std::vector<float> back(kFloats, -1.0f);
  ASSERT_TRUE(peer.Read(child.dst(), back.data(), bytes, "read").ok());
  EXPECT_EQ(back, reversed);
  // A small copy takes the one-syscall path.
  float one = 0;
  ASSERT_TRUE(peer.Read(child.src() + 4, &one, sizeof(one), "read").ok());
  EXPECT_EQ(one, 1.5f);
}

TEST(CmaPeerTest, UnmappedRangesAreClearErrors) {
  Child child;
  CmaPeer peer(child.pid(), child.probe(), Nonce());
  // A page-aligned range nothing maps: reserve it, then give it back.
  void* hole =
      mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  munmap(hole, 4096);
  char buf[64];
  absl::Status s =
      peer.Read(reinterpret_cast<uint64_t>(hole), buf, sizeof(buf), "put 7");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("put 7: bytes [0x"), std::string::npos) << s;
  EXPECT_NE(s.message().find("not mapped"), std::string::npos) << s;
  EXPECT_NE(s.message().find(std::to_string(child.pid())), std::string::npos);
  s = peer.Read(~uint64_t{0} - 8, buf, sizeof(buf), "get 3");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  // The peer stays usable.
  float one = 0;
  EXPECT_TRUE(peer.Read(child.src() + 4, &one, sizeof(one), "read").ok());
}

TEST(CmaPeerTest, RefusesWhatIsNotTheClient) {
  Child child;
  float buf[4];
  // The probe does not hold the nonce.
  CmaPeer wrong(child.pid(), child.probe(), "fedcba9876543210");
  absl::Status s = wrong.Read(child.src(), buf, sizeof(buf), "put");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("does not hold the region's nonce"),
            std::string::npos)
      << s;
  // Refused once, refused for good (no retry until the nonce appears).
  EXPECT_EQ(wrong.Write(child.dst(), buf, sizeof(buf), "get").code(),
            absl::StatusCode::kFailedPrecondition);
  // The daemon itself, though its memory holds the nonce at that address.
  char mine[16];
  std::memcpy(mine, kNonce, sizeof(mine));
  CmaPeer self(static_cast<uint64_t>(getpid()),
               reinterpret_cast<uint64_t>(mine), Nonce());
  s = self.Read(reinterpret_cast<uint64_t>(mine), buf, 4, "put");
  EXPECT_NE(s.message().find("names the daemon itself"), std::string::npos)
      << s;
  CmaPeer none(0, child.probe(), Nonce());
  EXPECT_EQ(none.Read(child.src(), buf, 4, "put").code(),
            absl::StatusCode::kFailedPrecondition);
}

// Put and Get by cross-memory attach through the command runner.
class CmaRunnerTest : public ::testing::Test {
 protected:
  CmaRunnerTest()
      : devices_(DeviceRegistry::Create()),
        peer_(child_.pid(), child_.probe(), Nonce()),
        runner_(RunnerConfig{1, devices_.get(), 1 << 20, nullptr, 0, &peer_},
                &sink_) {}
  ~CmaRunnerTest() override { runner_.ReleaseAll(); }

  void Run(std::vector<v1::Command> commands) {
    v1::Batch batch;
    for (auto& c : commands) {
      c.set_seq(++seq_);
      *batch.add_commands() = std::move(c);
    }
    runner_.RunBatch(batch);
    runner_.RunFinishedDownloads();
  }
  static v1::Command Put(uint64_t handle, uint64_t address, uint64_t floats) {
    v1::Command c;
    v1::Put* put = c.mutable_put();
    put->set_handle(handle);
    put->set_dtype(v1::FLOAT32);
    put->add_shape(static_cast<int64_t>(floats));
    put->set_last(true);
    put->set_cma_address(address);
    put->set_cma_size(floats * sizeof(float));
    return c;
  }
  static v1::Command Get(uint64_t handle, uint64_t request, uint64_t address,
                         uint64_t capacity) {
    v1::Command c;
    v1::Get* get = c.mutable_get();
    get->set_handle(handle);
    get->set_request_id(request);
    get->set_cma_address(address);
    get->set_cma_capacity(capacity);
    return c;
  }
  v1::ServerFrame Answer(uint64_t request) {
    return sink_.WaitFor([request](const v1::ServerFrame& f) {
      return (f.has_data() && f.data().request_id() == request) ||
             (f.has_error() && f.error().request_id() == request);
    });
  }

  Child child_;
  std::unique_ptr<DeviceRegistry> devices_;
  CmaPeer peer_;
  testing_util::RecordingSink sink_;
  CommandRunner runner_;
  uint64_t seq_ = 0;
};

TEST_F(CmaRunnerTest, PutThenGetMovesTheChildsBytes) {
  const size_t bytes = kFloats * sizeof(float);
  Run({Put(1, child_.src(), kFloats), Get(1, 10, child_.dst(), bytes)});
  v1::ServerFrame got = Answer(10);
  ASSERT_TRUE(got.has_data()) << got.DebugString();
  EXPECT_TRUE(got.data().cma());
  EXPECT_EQ(got.data().cma_size(), bytes);
  EXPECT_EQ(got.data().total_bytes(), bytes);
  EXPECT_TRUE(got.data().last());
  std::vector<float> back(kFloats, -1.0f);
  ASSERT_TRUE(peer_.Read(child_.dst(), back.data(), bytes, "check").ok());
  EXPECT_EQ(back, child_.values());
  // A ranged Get of the middle, smaller than the rest of the tensor.
  Run({Get(1, 11, child_.dst(), 8)});
  got = Answer(11);
  ASSERT_TRUE(got.has_data());
  EXPECT_EQ(got.data().cma_size(), 8u);
  EXPECT_FALSE(got.data().last());
}

TEST_F(CmaRunnerTest, BadRangesFailTheCommandNotTheSession) {
  void* hole =
      mmap(nullptr, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  munmap(hole, 1 << 20);
  const uint64_t bad = reinterpret_cast<uint64_t>(hole);
  // An upload from unmapped memory poisons its handle with the reason.
  Run({Put(1, bad, 16), Get(1, 20, child_.dst(), 64)});
  v1::ServerFrame got = Answer(20);
  ASSERT_TRUE(got.has_error()) << got.DebugString();
  EXPECT_NE(got.error().status().message().find("put of handle 1: bytes"),
            std::string::npos)
      << got.DebugString();
  // A download into unmapped memory is an error for that Get.
  Run({Put(2, child_.src(), 16), Get(2, 21, bad, 64)});
  got = Answer(21);
  ASSERT_TRUE(got.has_error());
  EXPECT_NE(got.error().status().message().find("get of handle 2: bytes"),
            std::string::npos)
      << got.DebugString();
  // More bytes than the tensor holds is refused before any copy.
  v1::Command big = Put(3, child_.src(), 16);
  big.mutable_put()->set_cma_size(1 << 30);
  Run({std::move(big), Get(3, 22, child_.dst(), 64)});
  got = Answer(22);
  ASSERT_TRUE(got.has_error());
  EXPECT_NE(got.error().status().message().find("carries 1073741824 bytes"),
            std::string::npos)
      << got.DebugString();
  // The session goes on: handle 2 is fine.
  Run({Get(2, 23, child_.dst(), 64)});
  got = Answer(23);
  ASSERT_TRUE(got.has_data()) << got.DebugString();
  float back[16];
  ASSERT_TRUE(peer_.Read(child_.dst(), back, sizeof(back), "check").ok());
  EXPECT_EQ(std::vector<float>(back, back + 16),
            std::vector<float>(child_.values().begin(),
                               child_.values().begin() + 16));
}

TEST(CmaRunnerNoPeerTest, CmaWithoutWelcomeCmaIsRefused) {
  auto devices = DeviceRegistry::Create();
  testing_util::RecordingSink sink;
  CommandRunner runner(RunnerConfig{1, devices.get(), 1 << 20, nullptr, 0},
                       &sink);
  v1::Batch batch;
  v1::Command* c = batch.add_commands();
  c->set_seq(1);
  c->mutable_get()->set_handle(1);
  c->mutable_get()->set_request_id(5);
  c->mutable_get()->set_cma_address(4096);
  c->mutable_get()->set_cma_capacity(4);
  runner.RunBatch(batch);
  v1::ServerFrame got =
      sink.WaitFor([](const v1::ServerFrame& f) { return f.has_error(); });
  EXPECT_NE(got.error().status().message().find(
                "cma_address without cross-memory attach"),
            std::string::npos)
      << got.DebugString();
  runner.ReleaseAll();
}

}  // namespace
}  // namespace tensord

// Cross-memory attach against real second processes: a forked child binds
// itself through a real binding socket (CmaBinder, the kernel names it) and
// holds the bytes (at the parent's addresses, as fork copies them); the
// daemon side reads and writes its memory. Checks the binding (a child is
// bound, the daemon itself is refused, a ticket binds once, a resume and
// the child's exit unbind), the one fixed text of an unbound session, the
// copies (one syscall and split over the pool), unmapped ranges, and Put and
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

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "proto/cma_bind.h"
#include "server/cma_binder.h"
#include "server/command_runner.h"
#include "server/session_test_fixture.h"

namespace tensord {
namespace {

constexpr size_t kFloats = (size_t{5} << 20) / sizeof(float);  // split path

// A binding socket whose bindings go to `peer`, as the daemon's go to the
// session holding the ticket.
std::unique_ptr<CmaBinder> BinderFor(std::shared_ptr<CmaPeer> peer) {
  auto binder = CmaBinder::Start(
      [peer](absl::string_view ticket, absl::StatusOr<PeerProcess> process) {
        if (!peer->HoldsTicket(ticket)) {
          return absl::NotFoundError("no session holds the ticket");
        }
        return peer->Bind(ticket, std::move(process));
      });
  EXPECT_TRUE(binder.ok()) << binder.status();
  return binder.ok() ? *std::move(binder) : nullptr;
}

// A child process that holds `src` and `dst` as they were at fork, binds
// itself with `ticket` at `socket` (the answer: bound()) and waits to be
// killed.
class Child {
 public:
  Child(const std::string& socket, const std::string& ticket)
      : src_(kFloats), dst_(kFloats, 0.0f) {
    std::iota(src_.begin(), src_.end(), 0.5f);
    int answer[2];
    EXPECT_EQ(pipe(answer), 0);
    pid_ = fork();
    if (pid_ == 0) {
      const char bound = CmaBindThisProcess(socket, ticket, 5000) ? 1 : 0;
      if (write(answer[1], &bound, 1) != 1) _exit(1);
      for (;;) pause();
    }
    close(answer[1]);
    char bound = 0;
    bound_ = read(answer[0], &bound, 1) == 1 && bound == 1;
    close(answer[0]);
  }
  ~Child() { Kill(); }
  // Ends the child and reaps it: its pid is free for reuse from here.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }
  bool bound() const { return bound_; }
  uint64_t src() const { return reinterpret_cast<uint64_t>(src_.data()); }
  uint64_t dst() const { return reinterpret_cast<uint64_t>(dst_.data()); }
  const std::vector<float>& values() const { return src_; }

 private:
  std::vector<float> src_;
  std::vector<float> dst_;
  pid_t pid_ = 0;
  bool bound_ = false;
};

// A peer, its binding socket, and a child bound to it.
struct Bound {
  Bound()
      : peer(*CmaPeer::Create()),
        binder(BinderFor(peer)),
        child(binder->name(), peer->ticket()) {}
  std::shared_ptr<CmaPeer> peer;
  std::unique_ptr<CmaBinder> binder;
  Child child;
};

// An address that nothing maps: reserved, then given back.
uint64_t Hole(size_t bytes) {
  void* hole =
      mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(hole, MAP_FAILED);
  munmap(hole, bytes);
  return reinterpret_cast<uint64_t>(hole);
}

std::string NotBound(absl::string_view what) {
  return absl::StrCat(what, ": ", CmaPeer::kNotBoundText);
}

TEST(CmaPeerTest, CopiesBothWaysWithTheBoundChild) {
  Bound b;
  ASSERT_TRUE(b.child.bound());
  EXPECT_TRUE(b.peer->bound());
  EXPECT_TRUE(b.peer->ticket().empty());  // used up
  const size_t bytes = kFloats * sizeof(float);
  std::vector<float> got(kFloats, -1.0f);
  ASSERT_TRUE(b.peer->Read(b.child.src(), got.data(), bytes, "read").ok());
  EXPECT_EQ(got, b.child.values());
  // Write a reversed copy into the child's dst and read it back.
  std::vector<float> reversed(b.child.values().rbegin(),
                              b.child.values().rend());
  ASSERT_TRUE(
      b.peer->Write(b.child.dst(), reversed.data(), bytes, "write").ok());
  std::vector<float> back(kFloats, -1.0f);
  ASSERT_TRUE(b.peer->Read(b.child.dst(), back.data(), bytes, "read").ok());
  EXPECT_EQ(back, reversed);
  // A small copy takes the one-syscall path.
  float one = 0;
  ASSERT_TRUE(b.peer->Read(b.child.src() + 4, &one, sizeof(one), "read").ok());
  EXPECT_EQ(one, 1.5f);
}

TEST(CmaPeerTest, UnboundIsOneFixedTextWhateverTheAddress) {
  auto peer = *CmaPeer::Create();
  EXPECT_EQ(peer->ticket().size(), kCmaTicketBytes);
  EXPECT_FALSE(peer->bound());
  // Mapped memory of this process and an unmapped address: the same text,
  // which names no process; nothing was copied.
  char mine[64] = "untouched";
  char buf[64] = {};
  const uint64_t mapped = reinterpret_cast<uint64_t>(mine);
  absl::Status a = peer->Read(mapped, buf, sizeof(buf), "put");
  absl::Status b = peer->Read(Hole(4096), buf, sizeof(buf), "put");
  absl::Status c = peer->Write(mapped, buf, sizeof(buf), "put");
  EXPECT_EQ(a.code(), absl::StatusCode::kFailedPrecondition) << a;
  EXPECT_EQ(a.message(), NotBound("put"));
  EXPECT_EQ(b, a);
  EXPECT_EQ(c, a);
  EXPECT_EQ(buf[0], 0);
  EXPECT_STREQ(mine, "untouched");
}

TEST(CmaPeerTest, TheDaemonItselfCannotBind) {
  auto peer = *CmaPeer::Create();
  auto binder = BinderFor(peer);
  // This process is the "daemon": it connects with the right ticket.
  EXPECT_FALSE(CmaBindThisProcess(binder->name(), peer->ticket(), 5000));
  EXPECT_FALSE(peer->bound());
  char mine[16] = "secret";
  char buf[16];
  EXPECT_EQ(
      peer->Read(reinterpret_cast<uint64_t>(mine), buf, 16, "put").message(),
      NotBound("put"));
  // The try used the ticket up: a child cannot bind with it now either.
  Child late(binder->name(), "0123456789abcdef0123456789abcdef");
  EXPECT_FALSE(late.bound());
  EXPECT_FALSE(peer->bound());
}

TEST(CmaPeerTest, ATicketBindsOnceAndAResumeUnbinds) {
  Bound b;
  ASSERT_TRUE(b.child.bound());
  const std::string used = "0123456789abcdef0123456789abcdef";
  // A second process with a wrong or used-up ticket is refused; the first
  // binding stands.
  Child second(b.binder->name(), used);
  EXPECT_FALSE(second.bound());
  EXPECT_TRUE(b.peer->bound());
  float one = 0;
  EXPECT_TRUE(b.peer->Read(b.child.src() + 4, &one, 4, "read").ok());
  // A resume: unbound, a new ticket, which the next process binds.
  b.peer->Renew();
  EXPECT_FALSE(b.peer->bound());
  EXPECT_EQ(b.peer->Read(b.child.src(), &one, 4, "put").message(),
            NotBound("put"));
  ASSERT_EQ(b.peer->ticket().size(), kCmaTicketBytes);
  Child third(b.binder->name(), b.peer->ticket());
  EXPECT_TRUE(third.bound());
  EXPECT_TRUE(b.peer->Read(third.src() + 4, &one, 4, "read").ok());
  EXPECT_EQ(one, 1.5f);
}

TEST(CmaPeerTest, AnExitedClientIsNeverWrittenAgain) {
  Bound b;
  ASSERT_TRUE(b.child.bound());
  b.child.Kill();  // reaped: its pid may be reused from here
  EXPECT_FALSE(b.peer->bound());
  float values[4] = {1, 2, 3, 4};
  EXPECT_EQ(
      b.peer->Write(b.child.dst(), values, sizeof(values), "get").message(),
      NotBound("get"));
}

TEST(CmaPeerTest, UnmappedRangesAreClearErrors) {
  Bound b;
  ASSERT_TRUE(b.child.bound());
  char buf[64];
  absl::Status s = b.peer->Read(Hole(4096), buf, sizeof(buf), "put 7");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("put 7: bytes [0x"), std::string::npos) << s;
  EXPECT_NE(s.message().find("not mapped"), std::string::npos) << s;
  s = b.peer->Read(~uint64_t{0} - 8, buf, sizeof(buf), "get 3");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  // The peer stays usable.
  float one = 0;
  EXPECT_TRUE(b.peer->Read(b.child.src() + 4, &one, sizeof(one), "read").ok());
}

// Put and Get by cross-memory attach through the command runner.
class CmaRunnerTest : public ::testing::Test {
 protected:
  CmaRunnerTest()
      : devices_(DeviceRegistry::Create()),
        runner_(RunnerConfig{1, devices_.get(), 1 << 20, nullptr, 0,
                             bound_.peer.get()},
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
    v1::CmaSpan* span = put->mutable_payload()->mutable_cma();
    span->set_address(address);
    span->set_size(floats * sizeof(float));
    return c;
  }
  static v1::Command Get(uint64_t handle, uint64_t request, uint64_t address,
                         uint64_t capacity) {
    v1::Command c;
    v1::Get* get = c.mutable_get();
    get->set_handle(handle);
    get->set_request_id(request);
    v1::CmaSpan* span = get->mutable_into()->mutable_cma();
    span->set_address(address);
    span->set_size(capacity);
    return c;
  }
  v1::ServerFrame Answer(uint64_t request) {
    return sink_.WaitFor([request](const v1::ServerFrame& f) {
      return (f.has_data() && f.data().request_id() == request) ||
             (f.has_error() && f.error().request_id() == request);
    });
  }

  Bound bound_;
  const Child& child_ = bound_.child;
  CmaPeer& peer_ = *bound_.peer;
  std::unique_ptr<DeviceRegistry> devices_;
  testing_util::RecordingSink sink_;
  CommandRunner runner_;
  uint64_t seq_ = 0;
};

TEST_F(CmaRunnerTest, PutThenGetMovesTheChildsBytes) {
  ASSERT_TRUE(child_.bound());
  const size_t bytes = kFloats * sizeof(float);
  Run({Put(1, child_.src(), kFloats), Get(1, 10, child_.dst(), bytes)});
  v1::ServerFrame got = Answer(10);
  ASSERT_TRUE(got.has_data()) << got.DebugString();
  ASSERT_TRUE(got.data().payload().has_cma());
  EXPECT_EQ(got.data().payload().cma().size(), bytes);
  EXPECT_EQ(got.data().payload().cma().address(), child_.dst());
  EXPECT_EQ(got.data().total_bytes(), bytes);
  EXPECT_TRUE(got.data().last());
  std::vector<float> back(kFloats, -1.0f);
  ASSERT_TRUE(peer_.Read(child_.dst(), back.data(), bytes, "check").ok());
  EXPECT_EQ(back, child_.values());
  // A ranged Get of the middle, smaller than the rest of the tensor.
  Run({Get(1, 11, child_.dst(), 8)});
  got = Answer(11);
  ASSERT_TRUE(got.has_data());
  EXPECT_EQ(got.data().payload().cma().size(), 8u);
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
  big.mutable_put()->mutable_payload()->mutable_cma()->set_size(1 << 30);
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
  c->mutable_get()->mutable_into()->mutable_cma()->set_address(4096);
  c->mutable_get()->mutable_into()->mutable_cma()->set_size(4);
  runner.RunBatch(batch);
  v1::ServerFrame got =
      sink.WaitFor([](const v1::ServerFrame& f) { return f.has_error(); });
  EXPECT_NE(got.error().status().message().find(
                "into.cma without cross-memory attach"),
            std::string::npos)
      << got.DebugString();
  runner.ReleaseAll();
}

}  // namespace
}  // namespace tensord

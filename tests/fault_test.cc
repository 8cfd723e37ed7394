// Faults: clients SIGKILLed at random points mid-stream, 100 in a row,
// while other sessions compute (their results bit-identical to a run
// without faults; the killed sessions' memory fully returned); SIGTERM
// under load (clean exit 0, even with a client that stopped reading); and a
// sticky device error (every session told, exit 75 for a restart).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/tensord_client.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"

namespace tensord {
namespace {

using testing::DaemonProcess;

std::string RunfilePath(const std::string& path) {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/",
                      std::getenv("TEST_WORKSPACE"), "/", path);
}

std::unique_ptr<Client> Connect(const std::string& address) {
  ClientOptions options;
  options.address = address;
  auto c = Client::Connect(options);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

// The deterministic computation the surviving sessions repeat.
std::vector<float> Workload(Client& c, int worker) {
  EXPECT_TRUE(c.manual_seed(1000 + worker).ok());
  Tensor w = randn(c, {64, 64});
  Tensor x = randn(c, {32, 64});
  for (int i = 0; i < 30; ++i) {
    auto t = c.Call("tanh", {matmul(x, w)});
    EXPECT_TRUE(t.ok());
    x = (*t)[0];
  }
  auto v = x.to_vector<float>();
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : std::vector<float>{};
}

// Waits (with a deadline) until `pred` holds; polls an Admin counter.
template <typename Pred>
bool Eventually(Pred pred) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!pred()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

// Starts fault_client; returns its pid and the read end of its stdout.
std::pair<pid_t, int> SpawnFaultClient(const std::string& address, int seed) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const std::string path = RunfilePath("tests/fault_client");
  const std::string seed_arg = std::to_string(seed);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl(path.c_str(), path.c_str(), address.c_str(), seed_arg.c_str(),
          nullptr);
    _exit(127);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

TEST(FaultTest, HundredClientsKilledMidStreamLoseNothingOfOthers) {
  auto daemon = DaemonProcess::Start({"--insecure", "--resume_grace=0s"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string address = (*daemon)->address();
  constexpr int kWorkers = 3;
  std::vector<std::vector<float>> reference(kWorkers);
  for (int w = 0; w < kWorkers; ++w) {
    auto c = Connect(address);
    ASSERT_NE(c, nullptr);
    reference[w] = Workload(*c, w);
    ASSERT_FALSE(reference[w].empty());
  }
  ASSERT_TRUE(Eventually([&] { return testing::CountSessions(address) == 0; }));
  const int64_t baseline = testing::ReadCpuMemory(address).allocated;

  std::atomic<bool> killing{true};
  std::atomic<int> rounds{0}, mismatches{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      auto c = Connect(address);
      if (c == nullptr) return;
      while (killing.load()) {
        if (Workload(*c, w) != reference[w]) ++mismatches;
        ++rounds;
      }
    });
  }
  std::mt19937 rng(20240601);
  int killed_mid_stream = 0;
  for (int i = 0; i < 100; ++i) {
    auto [pid, out] = SpawnFaultClient(address, i);
    // Kill after a random number (1..40) of frames sent.
    const int frames = 1 + static_cast<int>(rng() % 40);
    char dot;
    int seen = 0;
    while (seen < frames && read(out, &dot, 1) == 1) ++seen;
    killed_mid_stream += seen == frames;
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    close(out);
    EXPECT_TRUE(WIFSIGNALED(status)) << "fault client " << i << " exited "
                                     << status << " before it was killed";
  }
  killing = false;
  for (auto& t : workers) t.join();
  EXPECT_EQ(killed_mid_stream, 100);
  EXPECT_EQ(mismatches.load(), 0) << "of " << rounds.load() << " rounds";
  EXPECT_GE(rounds.load(), kWorkers);
  EXPECT_TRUE((*daemon)->alive());
  // Every killed session is released and its memory returned.
  EXPECT_TRUE(Eventually([&] { return testing::CountSessions(address) == 0; }))
      << testing::CountSessions(address) << " sessions left";
  EXPECT_TRUE(Eventually([&] {
    return testing::ReadCpuMemory(address).allocated == baseline;
  })) << testing::ReadCpuMemory(address).allocated
      << " bytes allocated, " << baseline << " before";
  std::printf("fault: 100 clients killed; %d worker rounds bit-identical\n",
              rounds.load());
  EXPECT_EQ((*daemon)->Terminate(), 0);
}

TEST(FaultTest, SigtermUnderLoadExitsCleanly) {
  auto daemon = DaemonProcess::Start({"--insecure"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string address = (*daemon)->address();
  // A client that asks for 64 MiB of downloads and never reads them: the
  // daemon's writer is blocked on it when the signal comes.
  testing::RawSession stuck(address);
  ASSERT_TRUE(stuck.ok());
  {
    v1::Call* full = stuck.Add()->mutable_call();
    full->set_op_id(stuck.OpId("full"));
    (*full->mutable_attrs())["shape"].mutable_ints()->add_values(4 << 20);
    (*full->mutable_attrs())["fill_value"].set_f(1.0);
    full->add_outputs(1);
    v1::ClientFrame frame;
    for (int i = 0; i < 24; ++i) {
      v1::Command* c = frame.mutable_batch()->add_commands();
      c->set_seq(100 + i);
      c->mutable_get()->set_handle(1);
      c->mutable_get()->set_request_id(i + 1);
    }
    ASSERT_TRUE(stuck.Flush().ok);
    ASSERT_TRUE(stuck.WriteRaw(frame));
  }
  std::atomic<int> started{0};
  std::vector<std::thread> load;
  for (int i = 0; i < 8; ++i) {
    load.emplace_back([&] {
      auto c = Connect(address);
      if (c == nullptr) return;
      ++started;
      Tensor x = randn(*c, {128, 128});
      while (true) {  // until the daemon goes away
        x = Tensor(relu(matmul(x, x)) * 0.001);
        if (!c->synchronize().ok()) return;
      }
    });
  }
  ASSERT_TRUE(Eventually([&] { return started.load() == 8; }));
  ASSERT_TRUE(Eventually([&] { return testing::CountSessions(address) == 9; }));
  const int status = (*daemon)->Terminate();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  for (auto& t : load) t.join();  // every client saw the end, none hangs
}

TEST(FaultTest, StickyDeviceErrorEndsEverySessionAndExitsForRestart) {
  auto daemon = DaemonProcess::Start(
      {"--insecure", "--fault_inject_sticky_error_op=tanh"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string address = (*daemon)->address();
  testing::RawSession bystander(address), culprit(address);
  ASSERT_TRUE(bystander.ok() && culprit.ok());
  bystander.PutFloats({4});
  ASSERT_TRUE(bystander.Flush().ok);
  const uint64_t x = culprit.PutFloats({4});
  v1::Call* call = culprit.Add()->mutable_call();
  call->set_op_id(culprit.OpId("tanh"));
  call->add_inputs(x);
  call->add_outputs(culprit.NewHandle());
  culprit.Flush();  // its replies, or the end of the stream
  for (testing::RawSession* s : {&bystander, &culprit}) {
    const grpc::Status end = s->AwaitEnd();
    EXPECT_EQ(end.error_code(), grpc::StatusCode::UNAVAILABLE)
        << end.error_message();
    EXPECT_TRUE(absl::StrContains(end.error_message(), "restarting"));
    EXPECT_TRUE(absl::StrContains(end.error_message(), "sticky"))
        << end.error_message();
  }
  const int status = (*daemon)->Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 75) << status;
}

}  // namespace
}  // namespace tensord

// Attacks that failed when a hostile tenant tried them (issue 24's "what
// held"), kept as regression tests against the real daemon: resuming another
// user's session, opening another session's shared-memory region as another
// uid, and chains deep enough to overflow a recursive release or backward.
// SECURITY.md lists the tests that keep the rest (tokens, foreign handles,
// scrubbing, bulk tokens, hostile shapes, killed clients) holding.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/str_replace.h"
#include "client/tensord_client.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"

namespace tensord {
namespace {

class HeldAttacksTest : public testing::DaemonSuite {
 protected:
  static void SetUpTestSuite() {
    const std::string path = ::testing::TempDir() + "/held_tokens";
    std::ofstream(path) << "alice tok-alice\nbob tok-bob\n";
    StartDaemon({"--tokens_file=" + path});
  }

  // A session's stream that fails at its Hello: the daemon's status.
  static grpc::Status RefusedHello(const std::string& token,
                                   const v1::Hello& hello) {
    testing::RawSession s(address(), token, "attacker", hello);
    EXPECT_FALSE(s.ok());
    return s.AwaitEnd();
  }

  // Alice's session still computes: one upload and its Sync.
  static void ExpectAlive(testing::RawSession* s) {
    s->PutFloats({4});
    EXPECT_TRUE(s->Flush().ok) << "the victim's session stopped answering";
  }
};

TEST_F(HeldAttacksTest, ResumingAnotherUsersSessionLooksLikeAnUnknownId) {
  testing::RawSession alice(address(), "tok-alice", "victim");
  ASSERT_TRUE(alice.ok());
  v1::Hello steal;
  steal.set_resume_session_id(alice.welcome().session_id());
  steal.set_resume_secret(alice.welcome().resume_secret());
  const grpc::Status stolen = RefusedHello("tok-bob", steal);
  EXPECT_EQ(stolen.error_code(), grpc::StatusCode::NOT_FOUND)
      << stolen.error_message();

  // The refusal must not tell bob that the id exists: it reads exactly as
  // an id that was never issued.
  v1::Hello unknown = steal;
  unknown.set_resume_session_id("0123456789abcdef");
  const grpc::Status never = RefusedHello("tok-bob", unknown);
  EXPECT_EQ(never.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(
      absl::StrReplaceAll(stolen.error_message(),
                          {{alice.welcome().session_id(), "ID"}}),
      absl::StrReplaceAll(never.error_message(), {{"0123456789abcdef", "ID"}}));

  // Alice's own token with a wrong secret is refused the same way.
  v1::Hello guess = steal;
  guess.set_resume_secret(std::string(steal.resume_secret().size(), '0'));
  EXPECT_EQ(RefusedHello("tok-alice", guess).error_code(),
            grpc::StatusCode::NOT_FOUND);
  ExpectAlive(&alice);
}

TEST_F(HeldAttacksTest, AnotherUidCannotOpenASessionsRegion) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "needs root to run the attacker as uid 65534 (CI runs "
                    "as root)";
  }
  v1::Hello hello;
  hello.set_shm_transfer(true);
  testing::RawSession alice(address(), "tok-alice", "victim", hello);
  ASSERT_TRUE(alice.ok());
  const std::string region = alice.welcome().shm().path();
  ASSERT_FALSE(region.empty()) << "the daemon offered no region";
  // The daemon's own uid can map it (so the path is real and the refusal
  // below is the kernel's, not a typo's).
  const int mine = open(region.c_str(), O_RDONLY);
  ASSERT_GE(mine, 0) << region;
  close(mine);

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // only async-signal-safe calls until _exit
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    const int fd = open(region.c_str(), O_RDONLY);
    _exit(fd < 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << (WEXITSTATUS(status) == 1 ? "uid 65534 opened " + region
                                   : std::string("setuid failed"));
  ExpectAlive(&alice);
}

TEST_F(HeldAttacksTest, ChainsOfThreeHundredThousandOpsReleaseAndBackward) {
  ClientOptions options;
  options.address = address();
  options.token = "tok-alice";
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  constexpr int kDepth = 300000;
  {
    Tensor leaf = (*client)->FromVector<float>({1, 2}, {2}).requires_grad_();
    Tensor x = leaf;
    for (int i = 0; i < kDepth; ++i) x = x.reshape({2});
    ASSERT_TRUE(x.sum().backward().ok());
    auto grad = leaf.grad();
    ASSERT_TRUE(grad.ok()) << grad.status();
    auto values = grad->to_vector<float>();
    ASSERT_TRUE(values.ok()) << values.status();
    EXPECT_EQ(*values, (std::vector<float>{1, 1}));
  }  // the whole chain is released here, node by node in the daemon
  ASSERT_TRUE((*client)->synchronize().ok());
  auto after = ((*client)->FromVector<float>({3}, {1}) * 2.0).item<float>();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, 6.0f);
}

}  // namespace
}  // namespace tensord

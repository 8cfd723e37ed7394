// Attack: a user removed from the tokens file (or whose quota was cut, or
// who lost admin rights) keeps using what it had: its open session, a
// detached session it could come back to, its old quota, the Admin service.
// After SIGHUP none of that holds, and the other users go on.
#include <signal.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"
#include "tests/security/security_env.h"

namespace tensord {
namespace testing {
namespace {

constexpr char kTokens[] =
    "alice tok-a\n"
    "bob tok-b quota=64MiB\n"
    "ops tok-o admin\n"
    "carol tok-c admin\n";
// alice removed, bob's quota cut to 512 KiB, carol no longer an admin.
constexpr char kReloaded[] =
    "bob tok-b quota=512KiB\n"
    "ops tok-o admin\n"
    "carol tok-c\n";

// Admin.ListSessions as `token`: the number of sessions, or the status.
grpc::Status ListSessions(const std::string& address, const std::string& token,
                          v1::ListSessionsResponse* response) {
  auto stub = v1::Admin::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer " + token);
  return stub->ListSessions(&ctx, v1::ListSessionsRequest(), response);
}

grpc::Status ListSessions(const std::string& address, const std::string& token,
                          int* count) {
  v1::ListSessionsResponse response;
  grpc::Status s = ListSessions(address, token, &response);
  *count = response.sessions_size();
  return s;
}

// The users of the sessions ListSessions shows as live (active or detached):
// a killed session stays listed as closing until its stream's end reaches
// the daemon, which may come after its client saw the end.
grpc::Status LiveUsers(const std::string& address, const std::string& token,
                       std::vector<std::string>* users) {
  v1::ListSessionsResponse response;
  grpc::Status s = ListSessions(address, token, &response);
  for (const auto& info : response.sessions()) {
    if (info.state() == "active" || info.state() == "detached") {
      users->push_back(info.user());
    }
  }
  return s;
}

// Uploads 1 MiB and reads it back; true if it was refused for the quota
// (the Put's error poisons the handle and comes with the Get).
bool MebibyteRefused(RawSession& s) {
  const uint64_t h = s.PutFloats({1 << 18});
  const uint64_t get = s.NewRequest();
  v1::Get* g = s.Add()->mutable_get();
  g->set_handle(h);
  g->set_request_id(get);
  RawSession::Reply r = s.Flush();
  EXPECT_TRUE(r.ok);
  bool refused = false;
  for (const auto& e : r.errors) {
    if (e.request_id() != get) continue;
    refused = true;
    EXPECT_EQ(e.status().code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << e.status().message();
    EXPECT_NE(e.status().message().find("quota"), std::string::npos)
        << e.status().message();
  }
  s.Add()->mutable_release()->add_handles(h);
  return refused;
}

TEST(SighupTest, ReloadEndsRemovedUsersAndAppliesQuotasAndAdminFlags) {
  const std::string tokens = WriteTestFile("sighup_tokens", kTokens);
  auto daemon = DaemonProcess::Start({"--tokens_file=" + tokens});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string& address = (*daemon)->address();

  RawSession open(address, "tok-a", "alice-open");
  ASSERT_TRUE(open.ok());
  std::string detached_id;
  {
    RawSession detached(address, "tok-a", "alice-detached");
    ASSERT_TRUE(detached.ok());
    detached_id = detached.welcome().session_id();
    detached.Cancel();
  }
  ASSERT_TRUE((*daemon)->WaitForLog("session " + detached_id + " detached"));
  RawSession bob(address, "tok-b", "bob");
  ASSERT_TRUE(bob.ok());
  EXPECT_FALSE(MebibyteRefused(bob));  // within 64 MiB
  int count = 0;
  ASSERT_TRUE(ListSessions(address, "tok-c", &count).ok());
  EXPECT_EQ(count, 3);

  WriteTestFile("sighup_tokens", kReloaded);
  ASSERT_EQ(kill((*daemon)->pid(), SIGHUP), 0);
  ASSERT_TRUE((*daemon)->WaitForLog("SIGHUP: tokens reloaded"));

  // alice's open session ends, saying why.
  const grpc::Status ended = open.AwaitEnd();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(ended.error_message().find(
                "user 'alice' was removed from the tokens file"),
            std::string::npos)
      << ended.error_message();
  // Her detached session is gone too (its memory with it), not waiting
  // for its grace period.
  EXPECT_TRUE((*daemon)->WaitForLog("session " + detached_id +
                                    " ended: user 'alice' was removed"));
  std::vector<std::string> live;
  ASSERT_TRUE(LiveUsers(address, "tok-o", &live).ok());
  EXPECT_EQ(live, std::vector<std::string>{"bob"});
  RawSession again(address, "tok-a", "alice-again");
  EXPECT_FALSE(again.ok());

  // bob's new quota applies to his open session at once.
  EXPECT_TRUE(MebibyteRefused(bob));
  bob.PutFloats({16});
  EXPECT_TRUE(bob.Flush().errors.empty());

  // carol is no admin any more.
  EXPECT_EQ(ListSessions(address, "tok-c", &count).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE((*daemon)->alive());
}

// A session detached before a SIGHUP cut its user's quota is told the new
// quota when it resumes (Welcome.quota_bytes), not the one it opened with,
// and the new quota is what holds.
TEST(SighupTest, AResumedSessionsWelcomeCarriesTheCurrentQuota) {
  const std::string tokens = WriteTestFile("sighup_resume", kTokens);
  auto daemon = DaemonProcess::Start({"--tokens_file=" + tokens});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string& address = (*daemon)->address();
  RawSession other(address, "tok-o", "another-tenant");
  ASSERT_TRUE(other.ok());
  v1::Hello resume;
  {
    RawSession bob(address, "tok-b", "bob");
    ASSERT_TRUE(bob.ok());
    EXPECT_EQ(bob.welcome().quota_bytes(), 64u << 20);
    resume.set_resume_session_id(bob.welcome().session_id());
    resume.set_resume_secret(bob.welcome().resume_secret());
    bob.Cancel();
  }
  ASSERT_TRUE((*daemon)->WaitForLog("session " + resume.resume_session_id() +
                                    " detached"));
  WriteTestFile("sighup_resume", kReloaded);
  ASSERT_EQ(kill((*daemon)->pid(), SIGHUP), 0);
  ASSERT_TRUE((*daemon)->WaitForLog("SIGHUP: tokens reloaded"));

  RawSession resumed(address, "tok-b", "bob-again", resume);
  ASSERT_TRUE(resumed.ok());
  EXPECT_TRUE(resumed.welcome().resumed());
  EXPECT_EQ(resumed.welcome().quota_bytes(), 512u << 10);
  EXPECT_TRUE(MebibyteRefused(resumed));
  // A new session of the same user is told the same.
  RawSession fresh(address, "tok-b", "bob-fresh");
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh.welcome().quota_bytes(), 512u << 10);
  other.PutFloats({16});
  EXPECT_TRUE(other.Flush().ok);
  EXPECT_TRUE((*daemon)->alive());
}

TEST(SighupTest, ABrokenTokensFileKeepsTheOldTable) {
  const std::string tokens = WriteTestFile("sighup_broken", kTokens);
  auto daemon = DaemonProcess::Start({"--tokens_file=" + tokens});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  RawSession alice((*daemon)->address(), "tok-a", "alice");
  ASSERT_TRUE(alice.ok());
  WriteTestFile("sighup_broken", "alice\n");
  ASSERT_EQ(kill((*daemon)->pid(), SIGHUP), 0);
  ASSERT_TRUE((*daemon)->WaitForLog("the tokens file was not reloaded"));
  alice.PutFloats({4});
  EXPECT_TRUE(alice.Flush().ok);
}

}  // namespace
}  // namespace testing
}  // namespace tensord

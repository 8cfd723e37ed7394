// Attacks before authentication: streams that never send a Hello (holding
// the daemon's resources forever), a flood of such streams, and a stream of
// wrong tokens (guessing, unnoticed), on the session stream or the Admin
// service. Each stream gets a deadline, their number is capped in all and
// per host, and failures are logged (rate limited, with the peer) and
// answered ever more slowly; another tenant's session goes on.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"
#include "tests/security/security_env.h"

namespace tensord {
namespace testing {
namespace {

// A Session stream that has sent nothing (not even a Hello).
struct IdleStream {
  explicit IdleStream(const std::string& address)
      : stub(v1::Tensord::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))),
        stream(stub->Session(&context)) {}
  // Waits up to `wait` for the daemon to end the stream: its status, or
  // nullopt if it was still open then (we cancel it).
  std::optional<grpc::Status> End(absl::Duration wait) {
    absl::Notification ended;
    std::atomic<bool> cancelled{false};
    std::thread cancel_later([&] {
      if (!ended.WaitForNotificationWithTimeout(wait)) {
        cancelled = true;
        context.TryCancel();
      }
    });
    v1::ServerFrame frame;
    while (stream->Read(&frame)) {
    }
    ended.Notify();
    cancel_later.join();
    grpc::Status status = stream->Finish();
    if (cancelled) return std::nullopt;
    return status;
  }
  std::unique_ptr<v1::Tensord::Stub> stub;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<v1::ClientFrame, v1::ServerFrame>>
      stream;
};

class UnauthenticatedTest : public DaemonSuite {
 protected:
  static void SetUpTestSuite() {
    StartDaemon({absl::StrCat("--tokens_file=",
                              WriteTestFile("unauth_tokens",
                                            "alice tok-a\nops tok-o admin\n")),
                 "--hello_timeout=1s", "--max_unauthenticated_streams=4"});
  }
};

TEST_F(UnauthenticatedTest, StreamWithoutHelloEndsAtTheDeadline) {
  RawSession alice(address(), "tok-a", "bystander");
  ASSERT_TRUE(alice.ok());
  IdleStream idle(address());
  const absl::Time start = absl::Now();
  const std::optional<grpc::Status> status = idle.End(absl::Seconds(20));
  ASSERT_TRUE(status.has_value()) << "the daemon kept a Hello-less stream";
  EXPECT_EQ(status->error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << status->error_message();
  EXPECT_NE(status->error_message().find("no Hello within 1s"),
            std::string::npos)
      << status->error_message();
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(900));
  alice.PutFloats({4});
  EXPECT_TRUE(alice.Flush().ok);
}

TEST(UnauthenticatedCapTest, StreamsBeyondTheCapAreRefused) {
  auto daemon = DaemonProcess::Start(
      {"--insecure", "--hello_timeout=60s", "--max_unauthenticated_streams=4"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string address = (*daemon)->address();
  RawSession alice(address, "", "bystander");
  ASSERT_TRUE(alice.ok());
  // Four streams that never say Hello fill the cap.
  std::vector<std::unique_ptr<IdleStream>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<IdleStream>(address));
  }
  // The next is refused at once. (Probe again if a probe was admitted: the
  // daemon may not have seen all four yet; a probe's cancel frees its slot.)
  std::optional<grpc::Status> refused;
  for (int i = 0; i < 20 && !refused; ++i) {
    IdleStream probe(address);
    std::optional<grpc::Status> s = probe.End(absl::Milliseconds(500));
    if (s) {
      EXPECT_EQ(s->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
      refused = s;
    }
  }
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->error_message().find("--max_unauthenticated_streams"),
            std::string::npos)
      << refused->error_message();
  // The session opened before the flood goes on; once the idle streams are
  // gone, new sessions open again.
  alice.PutFloats({4});
  EXPECT_TRUE(alice.Flush().ok);
  for (auto& s : held) s->context.TryCancel();
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  bool reopened = false;
  while (!reopened && absl::Now() < deadline) {
    RawSession again(address, "", "after");
    reopened = again.ok();
  }
  EXPECT_TRUE(reopened);
  held.clear();
  EXPECT_TRUE((*daemon)->alive());
}

TEST_F(UnauthenticatedTest, WrongTokensAreLoggedRateLimitedAndSlowed) {
  // Sequential guesses from one host: each refusal later than the last. A
  // session with the right token first, so that the first guess's time holds
  // no process-wide gRPC start-up (200 ms under ASan: more than one delay).
  {
    RawSession warm(address(), "tok-a", "alice");
    ASSERT_TRUE(warm.ok());
  }
  absl::Duration previous;
  for (int i = 0; i < 5; ++i) {
    const absl::Time start = absl::Now();
    RawSession guess(address(), absl::StrCat("guess-", i), "guesser");
    EXPECT_FALSE(guess.ok());
    const grpc::Status status = guess.AwaitEnd();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    const absl::Duration took = absl::Now() - start;
    if (i > 0) EXPECT_GT(took, previous) << "guess " << i;
    previous = took;
  }
  EXPECT_GE(previous, absl::Milliseconds(1500));  // 100 ms doubled 4 times
  EXPECT_TRUE(
      daemon_->WaitForLog("authentication failed from ipv4:127.0.0.1:"));
  // The right token from the same host is not held back.
  const absl::Time start = absl::Now();
  RawSession alice(address(), "tok-a", "alice");
  EXPECT_TRUE(alice.ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  // Many more failures: at most 10 lines a minute.
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      RawSession guess(address(), "wrong", "guesser");
      EXPECT_FALSE(guess.ok());
    });
  }
  for (auto& t : threads) t.join();
  const std::string log = daemon_->log();
  size_t lines = 0;
  for (size_t at = log.find("authentication failed"); at != std::string::npos;
       at = log.find("authentication failed", at + 1)) {
    ++lines;
  }
  EXPECT_LE(lines, 10u);
  alice.PutFloats({4});
  EXPECT_TRUE(alice.Flush().ok);
}

// One host's silent streams fill only its own share of the slots
// (--max_unauthenticated_streams_per_host), not the whole cap; that other
// hosts still get in is //server:auth_gate_test's (a test's connections all
// come from one host).
TEST(UnauthenticatedCapTest, OneHostCannotTakeEverySlot) {
  auto daemon = DaemonProcess::Start(
      {"--insecure", "--hello_timeout=60s", "--max_unauthenticated_streams=16",
       "--max_unauthenticated_streams_per_host=3"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string address = (*daemon)->address();
  RawSession bystander(address, "", "bystander");
  ASSERT_TRUE(bystander.ok());
  std::vector<std::unique_ptr<IdleStream>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<IdleStream>(address));
  }
  std::optional<grpc::Status> refused;
  for (int i = 0; i < 20 && !refused; ++i) {
    IdleStream probe(address);
    std::optional<grpc::Status> s = probe.End(absl::Milliseconds(500));
    if (s) {
      EXPECT_EQ(s->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
      refused = s;
    }
  }
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(
      refused->error_message().find("--max_unauthenticated_streams_per_host"),
      std::string::npos)
      << refused->error_message();
  bystander.PutFloats({4});
  EXPECT_TRUE(bystander.Flush().ok);
  // Once the host's idle streams are gone, it opens sessions again.
  for (auto& s : held) s->context.TryCancel();
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  bool reopened = false;
  while (!reopened && absl::Now() < deadline) {
    RawSession again(address, "", "after");
    reopened = again.ok();
  }
  EXPECT_TRUE(reopened);
  held.clear();
  EXPECT_TRUE((*daemon)->alive());
}

// Admin.ListSessions as `token` on `stub`, timed.
grpc::Status ListSessionsAs(v1::Admin::Stub* stub, const std::string& token,
                            absl::Duration* took) {
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer " + token);
  v1::ListSessionsResponse response;
  const absl::Time start = absl::Now();
  grpc::Status s =
      stub->ListSessions(&ctx, v1::ListSessionsRequest(), &response);
  *took = absl::Now() - start;
  return s;
}

// Guessing the admin token on the Admin service costs what it costs on the
// session stream: each refusal later than the last, logged at most 10 times
// a minute; the admin's own calls and the tenants' sessions go on.
TEST(AdminAuthenticationTest, WrongTokensAreLoggedRateLimitedAndSlowed) {
  auto daemon = DaemonProcess::Start({absl::StrCat(
      "--tokens_file=",
      WriteTestFile("admin_guess_tokens", "alice tok-a\nops tok-o admin\n"))});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string& address = (*daemon)->address();
  RawSession alice(address, "tok-a", "bystander");
  ASSERT_TRUE(alice.ok());
  // One channel, connected by an admin's call, so that the times below are
  // the daemon's answers, not connection setup.
  auto stub = v1::Admin::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  absl::Duration previous, took;
  ASSERT_TRUE(ListSessionsAs(stub.get(), "tok-o", &took).ok());
  for (int i = 0; i < 4; ++i) {
    // A made-up token, then a tenant's own token (no admin rights).
    const std::string token = i % 2 == 0 ? absl::StrCat("guess-", i) : "tok-a";
    const grpc::Status s = ListSessionsAs(stub.get(), token, &took);
    EXPECT_EQ(s.error_code(), i % 2 == 0 ? grpc::StatusCode::UNAUTHENTICATED
                                         : grpc::StatusCode::PERMISSION_DENIED)
        << s.error_message();
    if (i > 0) EXPECT_GT(took, previous) << "guess " << i;
    previous = took;
  }
  EXPECT_GE(previous, absl::Milliseconds(700));  // 100 ms doubled 3 times
  EXPECT_TRUE((*daemon)->WaitForLog(
      "Admin authentication failed from ipv4:127.0.0.1:"));
  // The admin's token from the same host is answered at once.
  EXPECT_TRUE(ListSessionsAs(stub.get(), "tok-o", &took).ok());
  EXPECT_LT(took, absl::Seconds(1));
  // A flood from many threads: at most 10 lines a minute in all.
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&stub] {
      absl::Duration ignored;
      EXPECT_FALSE(ListSessionsAs(stub.get(), "wrong", &ignored).ok());
    });
  }
  for (auto& t : threads) t.join();
  const std::string log = (*daemon)->log();
  size_t lines = 0;
  for (size_t at = log.find("authentication failed from");
       at != std::string::npos;
       at = log.find("authentication failed from", at + 1)) {
    ++lines;
  }
  EXPECT_LE(lines, 10u);
  alice.PutFloats({4});
  EXPECT_TRUE(alice.Flush().ok);
  EXPECT_TRUE((*daemon)->alive());
}

}  // namespace
}  // namespace testing
}  // namespace tensord

// Attack: one user opens many sessions at once, hoping that concurrent
// Hellos all see room under --max_sessions_per_user (17 of 16 got through
// when the count and the registration were separate lock sections). Exactly
// the cap must succeed, and another user and a later session go on.
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/barrier.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"
#include "tests/security/security_env.h"

namespace tensord {
namespace testing {
namespace {

constexpr int kCap = 4;
constexpr int kRacers = 48;

class SessionCapTest : public DaemonSuite {
 protected:
  static void SetUpTestSuite() {
    StartDaemon(
        {absl::StrCat("--tokens_file=", WriteTestFile("cap_tokens",
                                                      "alice tok-a\nbob tok-b\n"
                                                      "ops tok-o admin\n")),
         absl::StrCat("--max_sessions_per_user=", kCap)});
  }

  // Polls the daemon's session count until it is `n` (sessions end on the
  // daemon's side a little after the client has closed them).
  static bool AwaitSessions(int n) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline) {
      if (CountSessions(address(), "tok-o") == n) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }
};

TEST_F(SessionCapTest, ConcurrentHellosGetExactlyTheCap) {
  RawSession bob(address(), "tok-b", "bystander");
  ASSERT_TRUE(bob.ok());
  for (int round = 0; round < 3; ++round) {
    std::vector<std::unique_ptr<RawSession>> racers(kRacers);
    absl::Barrier* start = new absl::Barrier(kRacers);  // deletes itself
    std::vector<std::thread> threads;
    for (int i = 0; i < kRacers; ++i) {
      threads.emplace_back([&, i] {
        if (start->Block()) delete start;
        racers[i] = std::make_unique<RawSession>(address(), "tok-a", "racer");
      });
    }
    for (auto& t : threads) t.join();
    int opened = 0;
    for (const auto& r : racers) opened += r->ok();
    EXPECT_EQ(opened, kCap) << "round " << round;
    EXPECT_EQ(CountSessions(address(), "tok-o"), kCap + 1);
    // The other tenant is untouched.
    bob.PutFloats({4});
    EXPECT_TRUE(bob.Flush().ok);
    racers.clear();  // closes alice's sessions: their slots come back
    ASSERT_TRUE(AwaitSessions(1)) << "round " << round;
  }
  RawSession later(address(), "tok-a", "later");
  EXPECT_TRUE(later.ok());
}

}  // namespace
}  // namespace testing
}  // namespace tensord

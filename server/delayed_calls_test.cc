#include "server/delayed_calls.h"

#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(DelayedCallsTest, RunsInTimeOrderAndCancels) {
  DelayedCalls calls;
  Mutex mu;
  std::vector<int> order;
  absl::Notification done;
  const absl::Time now = absl::Now();
  auto record = [&](int i) {
    return [&, i] {
      MutexLock lock(&mu);
      order.push_back(i);
    };
  };
  calls.Schedule(now + absl::Milliseconds(30), record(3));
  calls.Schedule(now + absl::Milliseconds(10), record(1));
  const uint64_t cancelled =
      calls.Schedule(now + absl::Milliseconds(20), record(2));
  calls.Schedule(now + absl::Milliseconds(40), [&] { done.Notify(); });
  calls.Cancel(cancelled);
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  MutexLock lock(&mu);
  EXPECT_EQ(order, (std::vector<int>{1, 3}));
  EXPECT_EQ(calls.pending(), 0u);
}

TEST(DelayedCallsTest, PendingCallsAreDroppedAtDestruction) {
  bool ran = false;
  {
    DelayedCalls calls;
    calls.Schedule(absl::Now() + absl::Hours(1), [&] { ran = true; });
  }
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace tensord

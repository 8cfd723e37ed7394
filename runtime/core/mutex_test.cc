// The wrappers behave as the absl types, and (under --config=tsan, where this
// suite runs too) every hand-off below is one TSan must see as ordered:
// plain data written by one thread and read by another through each
// primitive (Note [TSan mutex annotations]).
#include "runtime/core/mutex.h"

#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tensord {
namespace {

#ifndef TENSORD_TSAN
// Zero cost outside TSan: nothing is added to the absl types.
static_assert(sizeof(Mutex) == sizeof(absl::Mutex), "Mutex adds state");
static_assert(sizeof(MutexLock) == sizeof(Mutex*), "MutexLock adds state");
static_assert(sizeof(CondVar) == sizeof(absl::CondVar), "CondVar adds state");
#endif

TEST(MutexTest, MutexLockOrdersWritesFromManyThreads) {
  Mutex mu;
  int64_t counter = 0;
  std::vector<int64_t> log;  // unguarded by type, but only touched locked
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        MutexLock lock(&mu);
        ++counter;
        log.push_back(counter);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  MutexLock lock(&mu);
  EXPECT_EQ(counter, 4000);
  EXPECT_EQ(log.size(), 4000u);
}

// The waiter's condition is evaluated by absl inside the other thread's
// Unlock; the payload is read after Await returns.
TEST(MutexTest, AwaitSeesWhatTheSignallerWrote) {
  Mutex mu;
  bool ready = false;
  std::vector<int> payload;
  std::thread producer([&] {
    MutexLock lock(&mu);
    payload = {1, 2, 3};
    ready = true;
  });
  {
    MutexLock lock(&mu);
    mu.Await(absl::Condition(&ready));
    EXPECT_EQ(payload, (std::vector<int>{1, 2, 3}));
  }
  producer.join();
}

TEST(MutexTest, AwaitWithTimeoutReturnsFalseHoldingTheLock) {
  Mutex mu;
  bool never = false;
  MutexLock lock(&mu);
  EXPECT_FALSE(
      mu.AwaitWithTimeout(absl::Condition(&never), absl::Milliseconds(10)));
  EXPECT_FALSE(mu.AwaitWithDeadline(absl::Condition(&never),
                                    absl::Now() + absl::Milliseconds(10)));
  mu.AssertHeld();
}

TEST(MutexTest, LockWhenAndPingPong) {
  Mutex mu;
  int turn = 0;  // even: main, odd: the other thread
  std::vector<int> seen;
  std::thread other([&] {
    for (int i = 0; i < 100; ++i) {
      mu.LockWhen(absl::Condition(
          +[](int* t) { return *t % 2 == 1; }, &turn));
      seen.push_back(turn);
      ++turn;
      mu.Unlock();
    }
  });
  for (int i = 0; i < 100; ++i) {
    MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](int* t) { return *t % 2 == 0; }, &turn));
    seen.push_back(turn);
    ++turn;
  }
  other.join();
  ASSERT_EQ(seen.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(seen[i], i);
}

TEST(MutexTest, TryLockFailsWhileAnotherThreadHoldsIt) {
  Mutex mu;
  Notification held, release;
  std::thread holder([&] {
    MutexLock lock(&mu);
    held.Notify();
    release.WaitForNotification();
  });
  held.WaitForNotification();
  EXPECT_FALSE(mu.TryLock());
  release.Notify();
  holder.join();
  if (!mu.TryLock()) {
    ADD_FAILURE() << "TryLock failed on a free mutex";
    return;
  }
  mu.Unlock();
}

TEST(MutexTest, CondVarWaitHandsOffData) {
  Mutex mu;
  CondVar cv;
  std::vector<int> queue;
  std::thread producer([&] {
    for (int i = 0; i < 50; ++i) {
      MutexLock lock(&mu);
      queue.push_back(i);
      cv.Signal();
    }
  });
  int sum = 0;
  for (int taken = 0; taken < 50;) {
    MutexLock lock(&mu);
    while (queue.empty()) cv.Wait(&mu);
    for (int v : queue) sum += v;
    taken += static_cast<int>(queue.size());
    queue.clear();
  }
  producer.join();
  EXPECT_EQ(sum, 49 * 50 / 2);
  MutexLock lock(&mu);
  EXPECT_TRUE(cv.WaitWithTimeout(&mu, absl::Milliseconds(1)));
}

TEST(MutexTest, NotificationPublishesPlainData) {
  Notification done;
  std::vector<int> result;  // no lock: Notify/Wait order it
  EXPECT_FALSE(done.HasBeenNotified());
  std::thread worker([&] {
    result.assign(100, 7);
    done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(60)));
  EXPECT_EQ(result.size(), 100u);
  EXPECT_TRUE(done.HasBeenNotified());
  worker.join();
}

TEST(MutexTest, BlockingCounterPublishesEveryWorkersWrites) {
  constexpr int kWorkers = 4;
  std::vector<int64_t> slots(kWorkers);  // each written by one worker
  BlockingCounter done(kWorkers);
  std::vector<std::thread> threads;
  for (int t = 0; t < kWorkers; ++t) {
    threads.emplace_back([&, t] {
      slots[t] = t + 1;
      done.DecrementCount();
    });
  }
  done.Wait();
  int64_t sum = 0;
  for (int64_t v : slots) sum += v;
  EXPECT_EQ(sum, 1 + 2 + 3 + 4);
  for (auto& thread : threads) thread.join();
}

// ~absl::Mutex updates absl's deadlock graph (Note [TSan mutex
// annotations]): many threads creating, locking and destroying mutexes.
TEST(MutexTest, MutexesDestroyedOnManyThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int round = 0; round < 3; ++round) {
        std::vector<std::unique_ptr<Mutex>> mutexes;
        for (int i = 0; i < 1000; ++i) {
          mutexes.push_back(std::make_unique<Mutex>());
          MutexLock lock(mutexes.back().get());
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
}

// The waiter frees the Notification as soon as it saw it.
TEST(MutexTest, NotificationMayBeDestroyedRightAfterTheWait) {
  for (int i = 0; i < 200; ++i) {
    auto done = std::make_unique<Notification>();
    std::thread notifier([n = done.get()] { n->Notify(); });
    done->WaitForNotification();
    done.reset();
    notifier.join();
  }
}

ABSL_CONST_INIT Mutex static_mu(absl::kConstInit);
int static_value ABSL_GUARDED_BY(static_mu) = 0;

TEST(MutexTest, ConstInitMutex) {
  std::thread writer([] {
    MutexLock lock(&static_mu);
    static_value = 42;
  });
  writer.join();
  MutexLock lock(&static_mu);
  EXPECT_EQ(static_value, 42);
}

}  // namespace
}  // namespace tensord

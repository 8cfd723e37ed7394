// CompletionQueue on fake work: completion is driven by the test through
// flags the polls read, so there are no timing assertions.
#include "runtime/completion_queue.h"

#include <atomic>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/mutex.h"

namespace tensord {
namespace {

// A fake device event: complete once the test says so, or failed.
struct FakeEvent {
  std::atomic<bool> complete{false};
  std::atomic<bool> failed{false};
  absl::StatusOr<bool> Poll() const {
    if (failed.load()) return absl::InternalError("device lost");
    return complete.load();
  }
};

// Records done calls in order; Wait blocks until `n` have arrived.
class Recorder {
 public:
  CompletionQueue::DoneFn Done(int id) {
    return [this, id](absl::Status s) {
      MutexLock lock(&mu_);
      ids_.push_back(id);
      statuses_.push_back(std::move(s));
    };
  }
  void Wait(size_t n) {
    MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return ids_.size() >= n;
    };
    mu_.Await(absl::Condition(&enough));
  }
  std::vector<int> ids() {
    MutexLock lock(&mu_);
    return ids_;
  }
  std::vector<absl::Status> statuses() {
    MutexLock lock(&mu_);
    return statuses_;
  }

 private:
  Mutex mu_;
  std::vector<int> ids_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> statuses_ ABSL_GUARDED_BY(mu_);
};

TEST(CompletionQueueTest, DoneRunsOnceWhenTheWorkCompletes) {
  CompletionQueue queue;
  Recorder recorder;
  FakeEvent event;
  queue.Add([&] { return event.Poll(); }, recorder.Done(1));
  EXPECT_EQ(queue.pending(), 1u);
  EXPECT_TRUE(recorder.ids().empty());  // not complete: never done
  event.complete = true;
  queue.Notify();
  recorder.Wait(1);
  EXPECT_EQ(recorder.ids(), std::vector<int>{1});
  EXPECT_TRUE(recorder.statuses()[0].ok());
}

TEST(CompletionQueueTest, CompletesOutOfOrderWithoutHeadOfLineBlocking) {
  CompletionQueue queue;
  Recorder recorder;
  FakeEvent slow, fast;
  queue.Add([&] { return slow.Poll(); }, recorder.Done(1));
  queue.Add([&] { return fast.Poll(); }, recorder.Done(2));
  fast.complete = true;  // no Notify: the poll period finds it
  recorder.Wait(1);
  EXPECT_EQ(recorder.ids(), std::vector<int>{2});
  slow.complete = true;
  queue.Notify();
  recorder.Wait(2);
  EXPECT_EQ(recorder.ids(), (std::vector<int>{2, 1}));
  EXPECT_EQ(queue.pending(), 0u);
}

TEST(CompletionQueueTest, AFailedPollReachesDone) {
  CompletionQueue queue;
  Recorder recorder;
  FakeEvent event;
  queue.Add([&] { return event.Poll(); }, recorder.Done(7));
  event.failed = true;
  queue.Notify();
  recorder.Wait(1);
  ASSERT_EQ(recorder.statuses().size(), 1u);
  EXPECT_EQ(recorder.statuses()[0].code(), absl::StatusCode::kInternal);
  EXPECT_EQ(recorder.statuses()[0].message(), "device lost");
}

TEST(CompletionQueueTest, DoneMayAddMoreWork) {
  CompletionQueue queue;
  Recorder recorder;
  FakeEvent first, second;
  first.complete = true;
  queue.Add([&] { return first.Poll(); },
            [&](absl::Status s) {
              recorder.Done(1)(std::move(s));
              queue.Add([&] { return second.Poll(); }, recorder.Done(2));
            });
  recorder.Wait(1);
  second.complete = true;
  queue.Notify();
  recorder.Wait(2);
  EXPECT_EQ(recorder.ids(), (std::vector<int>{1, 2}));
}

TEST(CompletionQueueTest, DestructionWaitsForPendingWork) {
  Recorder recorder;
  FakeEvent event;
  std::atomic<int> polls{0};
  {
    CompletionQueue queue;
    queue.Add(
        [&]() -> absl::StatusOr<bool> {
          // Completes on its third poll, which only a queue that keeps
          // polling while being destroyed reaches.
          return ++polls >= 3 || event.complete.load();
        },
        recorder.Done(3));
  }
  EXPECT_EQ(recorder.ids(), std::vector<int>{3});
  EXPECT_GE(polls.load(), 3);
}

}  // namespace
}  // namespace tensord

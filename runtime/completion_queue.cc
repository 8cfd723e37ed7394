// The completion thread of Note [Async downloads] (completion_queue.h).
#include "runtime/completion_queue.h"

#include <utility>

namespace tensord {

CompletionQueue::CompletionQueue(absl::Duration poll_period)
    : poll_period_(poll_period), thread_([this] { Loop(); }) {}

CompletionQueue::~CompletionQueue() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    notified_ = true;
  }
  thread_.join();
}

void CompletionQueue::Add(PollFn poll, DoneFn done) {
  MutexLock lock(&mu_);
  entries_.push_back(Entry{std::move(poll), std::move(done)});
  notified_ = true;  // poll it soon: it may be done already
}

void CompletionQueue::Notify() {
  MutexLock lock(&mu_);
  notified_ = true;
}

size_t CompletionQueue::pending() const {
  MutexLock lock(&mu_);
  return entries_.size() + in_flight_;
}

void CompletionQueue::Loop() {
  std::vector<Entry> polling;
  std::vector<std::pair<DoneFn, absl::Status>> finished;
  while (true) {
    {
      MutexLock lock(&mu_);
      // Without entries there is nothing to poll: sleep until Add/stop.
      auto woken = +[](CompletionQueue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                        q->mu_) { return q->notified_ || q->stopping_; };
      if (entries_.empty()) {
        mu_.Await(absl::Condition(woken, this));
      } else {
        mu_.AwaitWithTimeout(absl::Condition(woken, this), poll_period_);
      }
      notified_ = false;
      if (stopping_ && entries_.empty()) return;
      polling.swap(entries_);
      in_flight_ = polling.size();
    }
    // Polled outside the lock: a device query may take a while, and `done`
    // may Add.
    std::vector<Entry> still;
    for (Entry& e : polling) {
      absl::StatusOr<bool> finished_now = e.poll();
      if (finished_now.ok() && !*finished_now) {
        still.push_back(std::move(e));
      } else {
        finished.emplace_back(std::move(e.done), finished_now.status());
      }
    }
    polling.clear();
    {
      MutexLock lock(&mu_);
      for (Entry& e : still) entries_.push_back(std::move(e));
      in_flight_ = finished.size();
    }
    for (auto& [done, status] : finished) {
      {
        MutexLock lock(&mu_);
        --in_flight_;  // pending() counts entries whose done has not begun
      }
      done(std::move(status));
    }
    finished.clear();
  }
}

}  // namespace tensord

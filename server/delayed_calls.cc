#include "server/delayed_calls.h"

namespace tensord {

DelayedCalls::DelayedCalls() : thread_([this] { Loop(); }) {}

DelayedCalls::~DelayedCalls() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

uint64_t DelayedCalls::Schedule(absl::Time when, std::function<void()> call) {
  MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  calls_.emplace(std::make_pair(when, id), std::move(call));
  when_.emplace(id, when);
  return id;
}

void DelayedCalls::Cancel(uint64_t id) {
  MutexLock lock(&mu_);
  auto it = when_.find(id);
  if (it == when_.end()) return;
  calls_.erase({it->second, id});
  when_.erase(it);
}

size_t DelayedCalls::pending() const {
  MutexLock lock(&mu_);
  return calls_.size();
}

void DelayedCalls::Loop() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    const absl::Time next =
        calls_.empty() ? absl::InfiniteFuture() : calls_.begin()->first.first;
    const auto first = calls_.empty() ? std::pair<absl::Time, uint64_t>()
                                      : calls_.begin()->first;
    // Wakes at the earliest call, or when an earlier one or a stop arrives.
    auto changed = [this, first]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || (!calls_.empty() && calls_.begin()->first != first);
    };
    mu_.AwaitWithDeadline(absl::Condition(&changed), next);
    if (stopping_) break;
    if (calls_.empty() || calls_.begin()->first.first > absl::Now()) continue;
    auto due = calls_.extract(calls_.begin());
    when_.erase(due.key().second);
    mu_.Unlock();  // the call runs without the lock (it may take others)
    due.mapped()();
    mu_.Lock();
  }
}

}  // namespace tensord

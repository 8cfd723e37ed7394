#include "server/pending_downloads.h"

#include <string>

namespace tensord {

PendingDownloads::PendingDownloads() : state_(std::make_shared<State>()) {}

PendingDownloads::~PendingDownloads() {
  MutexLock lock(&state_->mu);
  state_->wake = nullptr;
  state_->waiting.clear();
  state_->finished.clear();
}

void PendingDownloads::SetWake(std::function<void()> wake) {
  MutexLock lock(&state_->mu);
  state_->wake = std::move(wake);
}

std::function<void(absl::Status)> PendingDownloads::Track(Continuation then) {
  uint64_t id;
  {
    MutexLock lock(&state_->mu);
    id = state_->next_id++;
    state_->waiting.emplace(id, std::move(then));
  }
  return [state = state_, id](absl::Status status) {
    // A copy of its own (not a shared reference-counted rep) crosses to the
    // executor: the device's thread and the executor then never touch one
    // rep, which ThreadSanitizer cannot follow through Debian's
    // uninstrumented Abseil (docs/reliability.md).
    absl::Status own =
        status.ok()
            ? absl::OkStatus()
            : absl::Status(status.code(), std::string(status.message()));
    status = absl::Status();
    MutexLock lock(&state->mu);
    state->finished.emplace_back(id, std::move(own));
    state->finished_count.fetch_add(1);
    // Under the lock, so SetWake(nullptr) is a barrier: after it returns no
    // wake runs into a session being destroyed.
    if (state->wake) state->wake();
  };
}

size_t PendingDownloads::outstanding() const {
  MutexLock lock(&state_->mu);
  return state_->waiting.size();
}

bool PendingDownloads::PopFinished(Continuation* then, absl::Status* status) {
  MutexLock lock(&state_->mu);
  if (state_->finished.empty()) return false;
  auto [id, s] = std::move(state_->finished.front());
  state_->finished.pop_front();
  state_->finished_count.fetch_sub(1);
  auto it = state_->waiting.find(id);
  *then = std::move(it->second);
  state_->waiting.erase(it);
  *status = std::move(s);
  return true;
}

void PendingDownloads::RunFinished() {
  Continuation then;
  absl::Status status;
  // Outside the lock: a continuation sends frames (and may wait for flow
  // control) while devices finish more downloads.
  while (PopFinished(&then, &status)) {
    then(status);
    then = nullptr;  // releases what it held, here on the executor
  }
}

void PendingDownloads::WaitAll() {
  while (true) {
    RunFinished();
    MutexLock lock(&state_->mu);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu) {
      return state_->waiting.empty() || !state_->finished.empty();
    };
    state_->mu.Await(absl::Condition(&ready));
    if (state_->waiting.empty()) return;
  }
}

}  // namespace tensord

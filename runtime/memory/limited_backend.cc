// Test backend: real memory from the wrapped backend, a hard byte budget, and
// events that the test completes by hand.
#include "runtime/memory/limited_backend.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/memory/host_backend.h"

namespace tensord {

LimitedBackend::LimitedBackend(size_t capacity, std::unique_ptr<Backend> inner)
    : capacity_(capacity),
      inner_(inner ? std::move(inner)
                   : std::make_unique<HostBackend>("test", capacity)) {}

std::string LimitedBackend::DeviceName() const { return inner_->DeviceName(); }

absl::StatusOr<void*> LimitedBackend::Malloc(size_t bytes) {
  MutexLock lock(&mu_);
  if (fail_next_ > 0) {
    --fail_next_;
    return absl::ResourceExhaustedError("injected device allocation failure");
  }
  if (bytes > capacity_ - used_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("test device full: ", used_, " of ", capacity_,
                     " bytes in use, asked for ", bytes));
  }
  absl::StatusOr<void*> p = inner_->Malloc(bytes);
  if (p.ok()) {
    used_ += bytes;
    ++mallocs_;
  }
  return p;
}

void LimitedBackend::Free(void* ptr, size_t bytes) {
  MutexLock lock(&mu_);
  inner_->Free(ptr, bytes);
  used_ -= bytes;
  ++frees_;
}

absl::Status LimitedBackend::Zero(void* ptr, size_t bytes,
                                  StreamHandle stream) {
  MutexLock lock(&mu_);
  ++zero_calls_;
  zeroed_bytes_ += static_cast<int64_t>(bytes);
  return inner_->Zero(ptr, bytes, stream);
}

absl::StatusOr<EventHandle> LimitedBackend::RecordEvent(StreamHandle stream) {
  MutexLock lock(&mu_);
  EventHandle id = reinterpret_cast<EventHandle>(next_event_++);
  events_[id] = FakeEvent{stream, immediate_};
  return id;
}

absl::StatusOr<bool> LimitedBackend::EventCompleted(EventHandle event) {
  MutexLock lock(&mu_);
  auto it = events_.find(event);
  if (it == events_.end()) {
    return absl::InvalidArgumentError("query of an unknown or destroyed event");
  }
  return it->second.complete;
}

void LimitedBackend::DestroyEvent(EventHandle event) {
  MutexLock lock(&mu_);
  events_.erase(event);
}

void LimitedBackend::SetEventsCompleteImmediately(bool value) {
  MutexLock lock(&mu_);
  immediate_ = value;
}

void LimitedBackend::CompleteEventsOn(StreamHandle stream) {
  MutexLock lock(&mu_);
  for (auto& [id, ev] : events_) {
    if (ev.stream == stream) ev.complete = true;
  }
}

void LimitedBackend::CompleteAllEvents() {
  MutexLock lock(&mu_);
  for (auto& [id, ev] : events_) ev.complete = true;
}

int64_t LimitedBackend::LiveEvents() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(events_.size());
}

void LimitedBackend::FailNextMallocs(int n) {
  MutexLock lock(&mu_);
  fail_next_ = n;
}

size_t LimitedBackend::used_bytes() const {
  MutexLock lock(&mu_);
  return used_;
}
int64_t LimitedBackend::num_mallocs() const {
  MutexLock lock(&mu_);
  return mallocs_;
}
int64_t LimitedBackend::num_frees() const {
  MutexLock lock(&mu_);
  return frees_;
}
int64_t LimitedBackend::num_zero_calls() const {
  MutexLock lock(&mu_);
  return zero_calls_;
}
int64_t LimitedBackend::zeroed_bytes() const {
  MutexLock lock(&mu_);
  return zeroed_bytes_;
}

}  // namespace tensord

// A capacity-limited wrapper around a real backend, for tests: it fails
// Malloc with RESOURCE_EXHAUSTED once `capacity` bytes are out, counts the
// calls the allocator makes, and hands out events that complete only when the
// test says so (a stand-in for a busy GPU stream). Memory itself is real
// (by default HostBackend), so tests can write and read it.
//
// Ownership: owns the wrapped backend.
// Thread safety: all methods lock an internal mutex, so a test thread may
// complete events while allocator threads record and query them.
#ifndef TENSORD_RUNTIME_MEMORY_LIMITED_BACKEND_H_
#define TENSORD_RUNTIME_MEMORY_LIMITED_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "runtime/core/mutex.h"
#include "runtime/memory/backend.h"

namespace tensord {

class LimitedBackend : public Backend {
 public:
  // Wraps `inner`, or a HostBackend named "test" when `inner` is null.
  explicit LimitedBackend(size_t capacity,
                          std::unique_ptr<Backend> inner = nullptr);

  std::string DeviceName() const override;
  absl::StatusOr<void*> Malloc(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
  size_t Capacity() const override { return capacity_; }
  absl::Status Zero(void* ptr, size_t bytes, StreamHandle stream) override;
  absl::StatusOr<EventHandle> RecordEvent(StreamHandle stream) override;
  absl::StatusOr<bool> EventCompleted(EventHandle event) override;
  void DestroyEvent(EventHandle event) override;

  // Test controls and observations.
  // When true (the default is false), new events are born complete.
  void SetEventsCompleteImmediately(bool value);
  // Completes every pending event recorded on `stream`.
  void CompleteEventsOn(StreamHandle stream);
  void CompleteAllEvents();
  // Events recorded and not yet destroyed, complete or not.
  int64_t LiveEvents() const;
  // Makes the next `n` Malloc calls fail as if the device were full.
  void FailNextMallocs(int n);

  size_t used_bytes() const;
  int64_t num_mallocs() const;
  int64_t num_frees() const;
  int64_t num_zero_calls() const;
  int64_t zeroed_bytes() const;

 private:
  struct FakeEvent {
    StreamHandle stream;
    bool complete;
  };

  const size_t capacity_;
  const std::unique_ptr<Backend> inner_;

  mutable Mutex mu_;
  size_t used_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t mallocs_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t frees_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t zero_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t zeroed_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int fail_next_ ABSL_GUARDED_BY(mu_) = 0;
  bool immediate_ ABSL_GUARDED_BY(mu_) = false;
  uintptr_t next_event_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<EventHandle, FakeEvent> events_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_MEMORY_LIMITED_BACKEND_H_

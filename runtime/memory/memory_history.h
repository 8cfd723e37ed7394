// MemoryHistory: an allocator's bounded ring of its most recent actions, what
// torch.cuda.memory._record_memory_history keeps, for the snapshot's
// device_traces (snapshot.h).
//
// Note [Memory history]
// - Off by default (capacity 0). While off, the allocator's whole cost is
//   enabled(): one relaxed load per action, and nothing is recorded.
// - On, Record stores a fixed-size entry under a leaf mutex of the ring's
//   own, held for the store only. The call site is not copied: an entry
//   shares the session's interned text (Note [Site ids]), one reference
//   count increment. So the ring holds at most capacity entries plus the
//   site texts they name (each at most kMaxSiteBytes, server/wire_limits.h).
// - A full ring overwrites its oldest entry: it keeps the newest events.
// - Entries are numbered in order (seq, never reused). A snapshot notes
//   end() while it holds the allocator's mutex, so the events before it
//   match the segments it saw (PyTorch's viewer replays the events backwards
//   from the segments), then copies them with EventsBefore after dropping
//   that mutex, newest first in chunks of kCopyChunk, taking the ring's
//   mutex per chunk: an executor recording meanwhile waits for one chunk at
//   most, never for the whole copy. Events overwritten while the copy runs
//   are the oldest ones, so the copy is always a contiguous run ending at
//   end().
// - SetCapacity(0) turns it off and forgets every event, as PyTorch's
//   _record_memory_history(None); a new capacity keeps the newest events
//   that fit.
//
// Thread safety: every method is thread-safe.
#ifndef TENSORD_RUNTIME_MEMORY_MEMORY_HISTORY_H_
#define TENSORD_RUNTIME_MEMORY_MEMORY_HISTORY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "runtime/core/mutex.h"
#include "runtime/memory/snapshot.h"

namespace tensord {

class MemoryHistory {
 public:
  static constexpr size_t kCopyChunk = 4096;

  // Whether Record keeps anything (Note [Memory history]: the cost when off).
  bool enabled() const {
    return capacity_.load(std::memory_order_relaxed) != 0;
  }
  size_t capacity() const { return capacity_.load(std::memory_order_relaxed); }

  void SetCapacity(size_t capacity);
  // Keeps `entry`, overwriting the oldest when full; dropped when off.
  // The caller sets everything but time_us, which is now.
  void Record(TraceEntry entry);

  // The seq the next event will get: events before it are recorded.
  uint64_t end() const;
  // Events kept now, and recorded since the ring was created.
  size_t size() const;
  // The kept events numbered before `end`, oldest first (see the Note).
  std::vector<TraceEntry> EventsBefore(uint64_t end) const;

 private:
  TraceEntry& Slot(uint64_t seq) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ring_[(seq - origin_) % ring_capacity_];
  }
  const TraceEntry& Slot(uint64_t seq) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ring_[(seq - origin_) % ring_capacity_];
  }

  std::atomic<size_t> capacity_{0};
  mutable Mutex mu_;
  // Entries seq in [first_, next_) are kept; entry seq lives in
  // ring_[(seq - origin_) % ring_capacity_]. ring_ grows to ring_capacity_.
  std::vector<TraceEntry> ring_ ABSL_GUARDED_BY(mu_);
  size_t ring_capacity_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t origin_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t first_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_MEMORY_MEMORY_HISTORY_H_

// MemoryHistory's ring; Note [Memory history] in memory_history.h.
#include "runtime/memory/memory_history.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"

namespace tensord {

void MemoryHistory::SetCapacity(size_t capacity) {
  MutexLock lock(&mu_);
  const uint64_t keep = std::min<uint64_t>(next_ - first_, capacity);
  std::vector<TraceEntry> kept;
  kept.reserve(keep);
  for (uint64_t seq = next_ - keep; seq < next_; ++seq) {
    kept.push_back(std::move(Slot(seq)));
  }
  ring_ = std::move(kept);
  ring_capacity_ = capacity;
  origin_ = first_ = next_ - keep;
  capacity_.store(capacity, std::memory_order_relaxed);
}

void MemoryHistory::Record(TraceEntry entry) {
  entry.time_us = absl::GetCurrentTimeNanos() / 1000;
  MutexLock lock(&mu_);
  if (ring_capacity_ == 0) return;  // turned off since enabled() said on
  if (ring_.size() < ring_capacity_) {
    ring_.push_back(std::move(entry));
  } else {
    Slot(next_) = std::move(entry);  // the oldest entry's slot
  }
  ++next_;
  if (next_ - first_ > ring_capacity_) first_ = next_ - ring_capacity_;
}

uint64_t MemoryHistory::end() const {
  MutexLock lock(&mu_);
  return next_;
}

size_t MemoryHistory::size() const {
  MutexLock lock(&mu_);
  return static_cast<size_t>(next_ - first_);
}

std::vector<TraceEntry> MemoryHistory::EventsBefore(uint64_t end) const {
  std::vector<TraceEntry> out;  // newest first until the end
  uint64_t hi = end;
  for (bool first_chunk = true;; first_chunk = false) {
    MutexLock lock(&mu_);  // per chunk: recorders wait one chunk at most
    hi = std::min(hi, next_);
    if (hi <= first_) break;  // the rest was overwritten, or none is left
    if (first_chunk) out.reserve(hi - first_);
    const uint64_t lo = std::max(first_, hi > kCopyChunk ? hi - kCopyChunk : 0);
    for (uint64_t seq = hi; seq-- > lo;) {
      out.push_back(Slot(seq));
    }
    hi = lo;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace tensord

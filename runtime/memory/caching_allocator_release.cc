// CachingAllocator: cross-stream events (RecordStream, polling the events of
// pending frees) and giving cached memory back to the backend (EmptyCache and
// the retry path of a miss). See "Cross-stream use" and "Misses" in the spec
// at the top of caching_allocator.cc.
#include "absl/base/internal/raw_logging.h"
#include "absl/strings/str_cat.h"
#include "runtime/memory/caching_allocator.h"

namespace tensord {
namespace {

StatPool PoolOf(const Block* b) {
  return b->pool->is_small ? kSmallPool : kLargePool;
}

}  // namespace

void CachingAllocator::ProcessEvents() {
  size_t kept = 0;
  for (size_t i = 0; i < pending_events_.size(); ++i) {
    PendingEvent pe = pending_events_[i];
    absl::StatusOr<bool> done = backend_->EventCompleted(pe.event);
    if (!done.ok() || !*done) {
      pending_events_[kept++] = pe;  // errors: keep waiting, never reuse early
      continue;
    }
    backend_->DestroyEvent(pe.event);
    if (pe.block->event_count > 0 && --pe.block->event_count == 0) {
      ReturnToPool(pe.block);
    }
  }
  pending_events_.resize(kept);
}

int64_t CachingAllocator::ReleaseCachedSegments() {
  if (!pending_events_.empty()) ProcessEvents();
  int64_t released = 0;
  for (BlockPool* pool : {&small_pool_, &large_pool_}) {
    for (auto it = pool->blocks.begin(); it != pool->blocks.end();) {
      Block* block = *it;
      if (block->is_split()) {
        ++it;
        continue;
      }
      it = recycler_.PoolErase(pool->blocks, it);
      const auto size = static_cast<int64_t>(block->size);
      DecreaseStat(stats_.segment, PoolOf(block), 1);
      DecreaseStat(stats_.reserved_bytes, PoolOf(block), size);
      ++stats_.num_device_free;
      if (history_.enabled()) {
        Trace(TraceAction::kSegmentFree,
              reinterpret_cast<uintptr_t>(block->ptr), block->size,
              block->stream, 0);
      }
      segments_.erase(reinterpret_cast<uintptr_t>(block->ptr));
      backend_->Free(block->ptr, block->size);
      released += size;
      recycler_.RecycleBlock(block);
    }
  }
  return released;
}

int64_t CachingAllocator::EmptyCache() {
  MutexLock lock(&mu_);
  const int64_t released = ReleaseCachedSegments();
  account_bytes_.PruneZeros();
  stream_bytes_.PruneZeros();
  if (history_.enabled()) {
    Trace(TraceAction::kEmptyCache, 0, static_cast<size_t>(released), nullptr,
          0);
  }
  return released;
}

absl::Status CachingAllocator::RecordStream(void* ptr, StreamHandle stream) {
  MutexLock lock(&mu_);
  auto it = allocated_.find(ptr);
  if (it == allocated_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "RecordStream: no live allocation at this address on ", device_name_));
  }
  Block* block = it->second;
  if (stream == block->stream) return absl::OkStatus();
  for (StreamHandle s : block->stream_uses) {
    if (s == stream) return absl::OkStatus();
  }
  block->stream_uses.push_back(stream);
  return absl::OkStatus();
}

}  // namespace tensord

// The caching allocator, specified (after PyTorch's CUDACachingAllocator).
//
// Why cache: device allocation (cudaMalloc, mmap) is slow and often
// synchronizing, while tensor programs free and reallocate the same sizes
// every iteration. So freed memory stays with the allocator and is handed out
// again; it goes back to the backend only on EmptyCache or to satisfy a
// request the backend could not.
//
// Sizes. A request of n bytes is rounded up to a multiple of 512 (0 -> 512).
// Rounded sizes <= 1 MiB are "small" and come from the small pool, whose
// segments are 2 MiB; larger ones come from the large pool, whose segments
// are 20 MiB for requests under 10 MiB and otherwise the request rounded up
// to 2 MiB. Segments of the two pools never mix, so small tensors do not
// fragment the large segments.
//
// Finding a block. Free blocks of a pool sit in a set ordered by
// (stream, size, address); lower_bound(stream, size) is the smallest block of
// that stream that fits (best fit, lowest address on ties). Only blocks of
// the requesting stream are candidates: a block is reused on the stream it
// was used on, so ordinary stream order makes the reuse safe without events.
//
// Splitting and coalescing. A block larger than the request is split when
// the rest is worth keeping: in the small pool whenever at least 512 bytes
// remain, in the large pool only when more than 1 MiB remains. When a block
// is freed, it merges with a free neighbour on either side, so a segment whose
// blocks are all free is again one block, which EmptyCache can release.
//
// Cross-stream use. RecordStream(ptr, s) notes that the block is also used on
// stream s. Freeing such a block records an event on every noted stream; the
// block is "active_pending_free" (neither allocated nor reusable) until all of
// them complete. Allocate polls the outstanding events first (never blocks).
//
// Misses. When no cached block fits, the backend is asked for a new segment.
// If it says RESOURCE_EXHAUSTED, every fully free cached segment is returned
// to it (num_alloc_retries counts these retries) and the request is tried
// once more; if that fails too, Allocate returns RESOURCE_EXHAUSTED with the
// numbers a user needs (what was asked, capacity, allocated, reserved but
// unallocated, what the session holds and its quota), num_ooms counts it,
// and the allocator's state is exactly as before apart from the released
// cache. Other backend errors pass through unchanged.
//
// Sessions. Every active block records its owning session; SessionBytes is
// the exact sum of the sizes of blocks a session holds, and SessionStatsOf
// the torch-style counters of those blocks alone (Note [Session stats] in
// allocator_stats.h), kept until the session ended and freed its last
// block. A quota is checked before anything else happens; if the block found
// is larger than the request and would push the session over its quota, it
// is split even where it normally would not be, so quota enforcement is
// exact.
//
// Note [Scrub]: no session reads bytes another wrote. Backends return zeroed
// memory. A block remembers whose bytes it holds (last_owner: kFreshMemory,
// a session id, or kMixedOwners after merges). A block going to a session
// other than its last owner (not fresh) is zeroed on the new owner's stream
// after the lock is dropped; a split remainder is zeroed under the lock (up
// to kLargeBuffer) and becomes fresh: left with the old owner's bytes it made
// the new owner's freed block mixed, zeroed again at every allocation.
//
// Statistics follow torch.cuda.memory_stats() (see allocator_stats.h).
#include "runtime/memory/caching_allocator.h"

#include <utility>

#include "absl/base/internal/raw_logging.h"
#include "absl/strings/str_cat.h"
#include "runtime/memory/host_backend.h"

namespace tensord {
namespace {

StatPool PoolOf(const Block* b) {
  return b->pool->is_small ? kSmallPool : kLargePool;
}

}  // namespace

CachingAllocator::CachingAllocator(std::unique_ptr<Backend> backend)
    : backend_(std::move(backend)),
      device_name_(backend_->DeviceName()),
      device_index_(DeviceIndexFromName(device_name_)) {}

CachingAllocator::~CachingAllocator() {
  MutexLock lock(&mu_);
  for (const PendingEvent& pe : pending_events_) {
    backend_->DestroyEvent(pe.event);
  }
  for (auto& [addr, head] : segments_) {
    size_t total = 0;
    for (Block* b = head; b != nullptr;) {
      total += b->size;
      Block* next = b->next;
      delete b;
      b = next;
    }
    backend_->Free(reinterpret_cast<void*>(addr), total);
  }
}

absl::StatusOr<void*> CachingAllocator::Allocate(size_t bytes,
                                                 const AllocContext& ctx) {
  const size_t rounded = RoundSize(bytes);
  Block* block = nullptr;
  bool scrub = false;
  {
    MutexLock lock(&mu_);
    if (!pending_events_.empty()) ProcessEvents();
    const uint64_t account = AccountOf(ctx.session);
    if (!quotas_.empty()) {
      absl::Status quota = CheckQuota(rounded, account);
      if (!quota.ok()) {
        ++session_stats_.Get(ctx.session)->num_quota_rejections;
        return quota;
      }
    }
    BlockPool& pool = IsSmallSize(rounded) ? small_pool_ : large_pool_;
    block = TakeCachedBlock(pool, rounded, ctx.stream);
    if (block == nullptr) {
      absl::StatusOr<Block*> fresh = AllocateSegment(pool, bytes, rounded, ctx);
      if (!fresh.ok()) return fresh.status();
      block = *fresh;
    }
    bool split = ShouldSplit(pool.is_small, block->size, rounded);
    if (!split && block->size > rounded && !quotas_.empty()) {
      auto q = quotas_.find(account);
      const int64_t held = account_bytes_.Find(account);
      split = q != quotas_.end() &&
              held + static_cast<int64_t>(block->size) > q->second;
    }
    scrub =
        block->last_owner != kFreshMemory && block->last_owner != ctx.session;
    if (split) {  // Note [Scrub]: the remainder is zeroed too
      const size_t rest = block->size - rounded;
      const bool rest_zeroed =
          scrub && rest <= kLargeBuffer &&
          backend_
              ->Zero(static_cast<char*>(block->ptr) + rounded, rest, ctx.stream)
              .ok();
      SplitBlock(block, rounded);
      if (rest_zeroed) block->next->last_owner = kFreshMemory;
    }

    block->allocated = true;
    block->requested = bytes;
    block->session = ctx.session;
    block->last_owner = ctx.session;
    allocated_.emplace(block->ptr, block);

    const StatPool p = PoolOf(block);
    const auto size = static_cast<int64_t>(block->size);
    IncreaseStat(stats_.allocation, p, 1);
    IncreaseStat(stats_.allocated_bytes, p, size);
    IncreaseStat(stats_.active, p, 1);
    IncreaseStat(stats_.active_bytes, p, size);
    IncreaseStat(stats_.requested_bytes, p, static_cast<int64_t>(bytes));
    SessionStats* mine = block->session_stats =
        session_stats_.Get(ctx.session);  // Note [Session stats]
    IncreaseStat(mine->allocation, p, 1);
    IncreaseStat(mine->allocated_bytes, p, size);
    IncreaseStat(mine->requested_bytes, p, static_cast<int64_t>(bytes));
    block->stream_bytes = stream_bytes_.Get(ctx.stream);
    *block->stream_bytes += size;
    block->account_bytes = account_bytes_.Get(account);
    *block->account_bytes += size;
    if (history_.enabled()) {
      Trace(TraceAction::kAlloc, reinterpret_cast<uintptr_t>(block->ptr), bytes,
            ctx.stream, ctx.session, ctx.site);
    }
  }
  void* ptr = block->ptr;  // stable: the block is ours until Free
  if (scrub) {
    // Lock dropped: zeroing a large block must not stall other threads, and
    // nobody else can reach this block now.
    absl::Status zeroed = backend_->Zero(ptr, block->size, ctx.stream);
    if (!zeroed.ok()) {
      MutexLock lock(&mu_);
      allocated_.erase(ptr);
      FreeLocked(block, /*unscrubbed=*/true);
      return zeroed;
    }
  }
  return ptr;
}

absl::Status CachingAllocator::CheckQuota(size_t rounded, uint64_t account) {
  auto q = quotas_.find(account);
  if (q == quotas_.end()) return absl::OkStatus();
  const int64_t held = account_bytes_.Find(account);
  if (held + static_cast<int64_t>(rounded) <= q->second) {
    return absl::OkStatus();
  }
  ++quota_rejections_;
  auto name = account_names_.find(account);
  if (name != account_names_.end()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        name->second, " is over the memory quota on ", device_name_,
        ": tried to allocate ", FormatBytes(rounded), ", the quota is ",
        FormatBytes(q->second), " and its sessions already hold ",
        FormatBytes(held),
        ". Release tensors no longer needed (in any of its sessions), or ask "
        "the operator to raise the quota."));
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "session ", account, " is over its memory quota on ", device_name_,
      ": tried to allocate ", FormatBytes(rounded), ", quota is ",
      FormatBytes(q->second), " and the session already holds ",
      FormatBytes(held),
      ". Release tensors the session no longer needs, or ask the operator "
      "to raise the quota."));
}

Block* CachingAllocator::TakeCachedBlock(BlockPool& pool, size_t rounded,
                                         StreamHandle stream) {
  Block key;
  key.stream = stream;
  key.size = rounded;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  UntrackInactive(block);
  recycler_.PoolErase(pool.blocks, it);
  return block;
}

absl::StatusOr<Block*> CachingAllocator::AllocateSegment(
    BlockPool& pool, size_t bytes, size_t rounded, const AllocContext& ctx) {
  const size_t segment_size = SegmentSize(rounded);
  // Note: the backend runs under mu_ (as in PyTorch); a device allocation is
  // rare once the cache is warm, and dropping the lock would let two threads
  // grow the cache for the same request.
  absl::StatusOr<void*> ptr = backend_->Malloc(segment_size);
  if (!ptr.ok() && absl::IsResourceExhausted(ptr.status())) {
    ++stats_.num_alloc_retries;
    ReleaseCachedSegments();
    ptr = backend_->Malloc(segment_size);
  }
  if (!ptr.ok()) {
    if (!absl::IsResourceExhausted(ptr.status())) return ptr.status();
    ++stats_.num_ooms;
    ++session_stats_.Get(ctx.session)->num_ooms;
    if (history_.enabled()) {
      const size_t capacity = backend_->Capacity();
      const auto reserved =
          static_cast<size_t>(stats_.reserved_bytes[kAllPools].current);
      Trace(TraceAction::kOom, capacity > reserved ? capacity - reserved : 0,
            segment_size, ctx.stream, ctx.session, ctx.site);
    }
    return OutOfMemoryError(bytes, segment_size, ctx, ptr.status());
  }
  Block* block = recycler_.NewBlock();
  block->ptr = *ptr;
  block->size = segment_size;
  block->stream = ctx.stream;
  block->pool = &pool;
  segments_.emplace(reinterpret_cast<uintptr_t>(block->ptr), block);
  const StatPool p = PoolOf(block);
  IncreaseStat(stats_.segment, p, 1);
  IncreaseStat(stats_.reserved_bytes, p, static_cast<int64_t>(segment_size));
  ++stats_.num_device_alloc;
  if (history_.enabled()) {
    Trace(TraceAction::kSegmentAlloc, reinterpret_cast<uintptr_t>(block->ptr),
          segment_size, ctx.stream, ctx.session, ctx.site);
  }
  return block;
}

void CachingAllocator::SplitBlock(Block* block, size_t rounded) {
  Block* rest = recycler_.NewBlock();
  rest->ptr = static_cast<char*>(block->ptr) + rounded;
  rest->size = block->size - rounded;
  rest->stream = block->stream;
  rest->pool = block->pool;
  rest->last_owner = block->last_owner;
  rest->prev = block;
  rest->next = block->next;
  if (block->next != nullptr) block->next->prev = rest;
  block->next = rest;
  block->size = rounded;
  recycler_.PoolInsert(block->pool->blocks, rest);
  TrackInactive(rest);
}

void CachingAllocator::Free(void* ptr) {
  if (ptr == nullptr) return;
  MutexLock lock(&mu_);
  auto it = allocated_.find(ptr);
  if (it == allocated_.end()) {
    // A bug in the caller (double free or a foreign pointer); ignoring it
    // keeps the allocator consistent.
    ABSL_RAW_LOG(ERROR, "tensord: Free(%p) of memory not allocated by %s", ptr,
                 device_name_.c_str());
    return;
  }
  Block* block = it->second;
  allocated_.erase(it);
  FreeLocked(block, /*unscrubbed=*/false);
}

void CachingAllocator::FreeLocked(Block* block, bool unscrubbed) {
  const StatPool p = PoolOf(block);
  const auto size = static_cast<int64_t>(block->size);
  DecreaseStat(stats_.allocation, p, 1);
  DecreaseStat(stats_.allocated_bytes, p, size);
  SessionStats* mine = block->session_stats;
  DecreaseStat(mine->allocation, p, 1);
  DecreaseStat(mine->allocated_bytes, p, size);
  DecreaseStat(mine->requested_bytes, p,
               static_cast<int64_t>(block->requested));
  if (mine->allocated_bytes[kAllPools].current == 0 &&
      !ended_sessions_.empty() && ended_sessions_.erase(block->session) != 0) {
    session_stats_.Erase(block->session);  // its last block: it ended
  }
  *block->stream_bytes -= size;
  *block->account_bytes -= size;
  block->session_stats = nullptr;
  block->stream_bytes = block->account_bytes = nullptr;
  block->allocated = false;
  if (unscrubbed) block->last_owner = kMixedOwners;
  if (history_.enabled()) {
    Trace(TraceAction::kFreeRequested, reinterpret_cast<uintptr_t>(block->ptr),
          block->requested, block->stream, block->session);
  }
  if (block->stream_uses.empty()) {
    ReturnToPool(block);
    return;
  }
  block->pending_free = true;
  for (StreamHandle stream : block->stream_uses) {
    absl::StatusOr<EventHandle> event = backend_->RecordEvent(stream);
    if (!event.ok()) {
      // Without the event we cannot know when the other stream is done, so
      // the block is never reused (leaked) rather than risk a race.
      ABSL_RAW_LOG(ERROR, "tensord: %s: recording a free event failed: %s",
                   device_name_.c_str(), event.status().ToString().c_str());
      block->event_count = -1;
      continue;
    }
    pending_events_.push_back(PendingEvent{*event, block});
    if (block->event_count >= 0) ++block->event_count;
  }
  block->stream_uses.clear();
}

void CachingAllocator::ReturnToPool(Block* block) {
  if (history_.enabled()) {  // the block as freed, before it merges
    Trace(TraceAction::kFreeCompleted, reinterpret_cast<uintptr_t>(block->ptr),
          block->requested, block->stream, block->session);
  }
  const StatPool p = PoolOf(block);
  DecreaseStat(stats_.active, p, 1);
  DecreaseStat(stats_.active_bytes, p, static_cast<int64_t>(block->size));
  DecreaseStat(stats_.requested_bytes, p,
               static_cast<int64_t>(block->requested));
  block->requested = 0;
  block->pending_free = false;
  block->event_count = 0;
  BlockSet& free_blocks = block->pool->blocks;
  if (Block* prev = block->prev; prev != nullptr && prev->is_free()) {
    UntrackInactive(prev);
    recycler_.PoolErase(free_blocks, free_blocks.find(prev));
    prev->size += block->size;
    prev->next = block->next;
    if (block->next != nullptr) block->next->prev = prev;
    prev->last_owner = MergeOwners(prev->last_owner, block->last_owner);
    recycler_.RecycleBlock(block);
    block = prev;
  }
  if (Block* next = block->next; next != nullptr && next->is_free()) {
    UntrackInactive(next);
    recycler_.PoolErase(free_blocks, free_blocks.find(next));
    block->size += next->size;
    block->next = next->next;
    if (next->next != nullptr) next->next->prev = block;
    block->last_owner = MergeOwners(block->last_owner, next->last_owner);
    recycler_.RecycleBlock(next);
  }
  recycler_.PoolInsert(free_blocks, block);
  TrackInactive(block);
}

void CachingAllocator::TrackInactive(const Block* block) {
  if (!block->is_split()) return;
  IncreaseStat(stats_.inactive_split, PoolOf(block), 1);
  IncreaseStat(stats_.inactive_split_bytes, PoolOf(block),
               static_cast<int64_t>(block->size));
}

void CachingAllocator::UntrackInactive(const Block* block) {
  if (!block->is_split()) return;
  DecreaseStat(stats_.inactive_split, PoolOf(block), 1);
  DecreaseStat(stats_.inactive_split_bytes, PoolOf(block),
               static_cast<int64_t>(block->size));
}

std::unique_ptr<CachingAllocator> MakeHostCachingAllocator(
    std::string device_name, size_t capacity) {
  return std::make_unique<CachingAllocator>(
      std::make_unique<HostBackend>(std::move(device_name), capacity));
}

}  // namespace tensord

// CachingAllocator: one per device, PyTorch-style caching over a Backend.
// The design (rounding, pools, best fit, splitting, coalescing, stream reuse
// rules, retry, scrubbing, quotas) is specified at the top of
// caching_allocator.cc.
//
// Ownership: owns its Backend and every segment obtained from it; the
// destructor returns all segments, so the allocator must outlive every
// pointer it handed out. Callers own a pointer from Allocate until they pass
// it to Free.
//
// Thread safety: every public method is safe to call concurrently. One
// Mutex guards all state; the backend is called under it except for
// Backend::Zero, which runs after the lock is dropped (the block is already
// the caller's, so nobody else can touch it).
#ifndef TENSORD_RUNTIME_MEMORY_CACHING_ALLOCATOR_H_
#define TENSORD_RUNTIME_MEMORY_CACHING_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/core/mutex.h"
#include "runtime/memory/allocator.h"
#include "runtime/memory/allocator_stats.h"
#include "runtime/memory/backend.h"
#include "runtime/memory/block.h"
#include "runtime/memory/block_recycler.h"
#include "runtime/memory/memory_history.h"
#include "runtime/memory/snapshot.h"

namespace tensord {

class CachingAllocator : public Allocator {
 public:
  explicit CachingAllocator(std::unique_ptr<Backend> backend);
  ~CachingAllocator() override;

  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Allocator. Allocate reuses a cached block of ctx.stream when one fits,
  // else asks the backend (freeing the cache and retrying once on a miss).
  // Memory last used by another session arrives zeroed.
  absl::StatusOr<void*> Allocate(size_t bytes,
                                 const AllocContext& ctx) override;
  void Free(void* ptr) override;
  int64_t SessionBytes(uint64_t session) const override;
  // Returns every fully free segment to the backend. Blocks waiting for
  // cross-stream events are not waited for; their segments stay.
  int64_t EmptyCache() override;

  // Marks `ptr` (live, from Allocate) as used on `stream` as well as its own:
  // once freed, it is not reused until work queued on `stream` up to the
  // Free has completed. NOT_FOUND for a pointer that is not live here.
  absl::Status RecordStream(void* ptr, StreamHandle stream);

  // Usable bytes of the live allocation at `ptr` (>= the request), or 0 if
  // `ptr` is not a live allocation of this allocator.
  size_t AllocationSize(const void* ptr) const;

  // Caps the bytes `session` may hold at once; checked before allocating.
  // A negative `bytes` removes the cap.
  void SetSessionQuota(uint64_t session, int64_t bytes);
  std::optional<int64_t> SessionQuota(uint64_t session) const;

  // Quota accounts. A session is its own account unless it joins one; then
  // the quota set with SetSessionQuota(account, ...) caps the bytes all of
  // the account's sessions hold together (a user's sessions share the user's
  // quota). `name` appears in over-quota messages ("user 'alice'").
  void JoinAccount(uint64_t session, uint64_t account, std::string name);
  void LeaveAccount(uint64_t session);
  // The session ended (SessionManager calls it then): it leaves its account,
  // and its SessionStatsOf counters go once it holds no block.
  void EndSession(uint64_t session);

  // Memory a session holds outside the allocator (its shared host buffers,
  // server/shared_buffers.h) that its quota covers all the same: checked
  // against the quota of the session's account as Allocate checks (the same
  // RESOURCE_EXHAUSTED message), then counted in that account until
  // UnchargeExternal. Not part of the allocator's stats or SessionBytes.
  // Returns the account charged, which UnchargeExternal takes (the session
  // may have left it by then).
  absl::StatusOr<uint64_t> ChargeExternal(uint64_t session, size_t bytes);
  void UnchargeExternal(uint64_t account, size_t bytes);

  MemoryStats GetStats() const;
  // Note [Session stats]: `session`'s own counters (zero for a session that
  // holds nothing and never did here); ResetSessionPeaks sets its peaks to
  // their current values (torch.cuda.reset_peak_memory_stats for a tenant).
  SessionStats SessionStatsOf(uint64_t session) const;
  void ResetSessionPeaks(uint64_t session);
  // Torch-style flat keys, e.g. "allocated_bytes.all.current".
  std::map<std::string, int64_t> Stats() const {
    return StatsToMap(GetStats());
  }
  // Sets every peak to its current value (torch.cuda.reset_peak_memory_stats).
  void ResetPeakStats();
  // Zeroes the allocated/freed totals and the event counters.
  void ResetAccumulatedStats();

  // Keeps the last `max_entries` actions for Snapshot().trace; 0 turns the
  // history off and forgets it (Note [Memory history]).
  void RecordHistory(size_t max_entries) { history_.SetCapacity(max_entries); }
  const MemoryHistory& history() const { return history_; }
  // Segments and blocks as of one instant, and the history's events up to
  // it followed by a "snapshot" event (when there are any). The events are
  // copied after the allocator's mutex is dropped (Note [Memory history]).
  MemorySnapshot Snapshot() const;
  std::string SnapshotJson() const { return SnapshotToJson(Snapshot()); }

  const std::string& device_name() const { return device_name_; }
  int device_index() const { return device_index_; }

 private:
  // Counters per session, account or stream (bytes, or a session's
  // SessionStats). Entries have stable addresses, so an allocated block
  // points at its own (Free needs no lookup), and a one-entry cache serves
  // the usual run of requests from one session. Zero byte counts stay until
  // EmptyCache prunes them; a session's stats until it ended and holds
  // nothing (EndSession, FreeLocked).
  template <typename Key, typename Value = int64_t>
  struct ByteCounters {
    std::unordered_map<Key, Value> map;
    Key last_key{};
    Value* last = nullptr;

    Value* Get(Key key) {
      if (last == nullptr || last_key != key) {
        last = &map[key];
        last_key = key;
      }
      return last;
    }
    Value Find(Key key) const {
      auto it = map.find(key);
      return it == map.end() ? Value{} : it->second;
    }
    void Erase(Key key) {
      if (last_key == key) last = nullptr;
      map.erase(key);
    }
    void PruneZeros() {
      for (auto it = map.begin(); it != map.end();) {
        it = it->second == 0 ? map.erase(it) : std::next(it);
      }
      last = nullptr;
    }
  };

  struct PendingEvent {
    EventHandle event;
    Block* block;
  };

  // Allocation steps (caching_allocator.cc).
  absl::Status CheckQuota(size_t rounded, uint64_t account)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t SessionBytesLocked(uint64_t session) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  uint64_t AccountOf(uint64_t session) const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    if (account_of_.empty()) return session;
    auto it = account_of_.find(session);
    return it == account_of_.end() ? session : it->second;
  }
  Block* TakeCachedBlock(BlockPool& pool, size_t rounded, StreamHandle stream)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Block*> AllocateSegment(BlockPool& pool, size_t bytes,
                                         size_t rounded,
                                         const AllocContext& ctx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SplitBlock(Block* block, size_t rounded)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Bookkeeping for a block that stops being allocated; `unscrubbed` means
  // its bytes may still belong to a previous owner.
  void FreeLocked(Block* block, bool unscrubbed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes a freed block reusable: merges free neighbours, back into the pool.
  void ReturnToPool(Block* block) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Events and releasing memory (caching_allocator_release.cc).
  void ProcessEvents() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t ReleaseCachedSegments() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // inactive_split stats: counted while a block is free inside a split
  // segment. Untrack before changing such a block, Track after.
  void TrackInactive(const Block* block) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UntrackInactive(const Block* block) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Inspection and messages (caching_allocator_inspect.cc).
  absl::Status OutOfMemoryError(size_t bytes, size_t segment_size,
                                const AllocContext& ctx,
                                const absl::Status& backend_status) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SnapshotSegments(MemorySnapshot& out) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records an action in the history. Called under mu_ (so the history's
  // order is the allocator's) and only when history_.enabled().
  void Trace(TraceAction action, uintptr_t addr, size_t size,
             StreamHandle stream, uint64_t session,
             const std::shared_ptr<const std::string>* site = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::unique_ptr<Backend> backend_;
  const std::string device_name_;
  const int device_index_;

  mutable Mutex mu_;
  BlockPool small_pool_ ABSL_GUARDED_BY(mu_){true};
  BlockPool large_pool_ ABSL_GUARDED_BY(mu_){false};
  // Head block of every segment, by address.
  std::map<uintptr_t, Block*> segments_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<const void*, Block*> allocated_ ABSL_GUARDED_BY(mu_);
  std::vector<PendingEvent> pending_events_ ABSL_GUARDED_BY(mu_);
  DeviceStats stats_ ABSL_GUARDED_BY(mu_);
  int64_t quota_rejections_ ABSL_GUARDED_BY(mu_) = 0;
  // Note [Session stats]; allocated_bytes[kAllPools].current is what
  // SessionBytes returns.
  ByteCounters<uint64_t, SessionStats> session_stats_ ABSL_GUARDED_BY(mu_);
  // Sessions that ended (EndSession) while holding blocks: their stats go
  // when the last block is freed.
  absl::flat_hash_set<uint64_t> ended_sessions_ ABSL_GUARDED_BY(mu_);
  ByteCounters<uint64_t> account_bytes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, uint64_t> account_of_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::string> account_names_
      ABSL_GUARDED_BY(mu_);
  ByteCounters<StreamHandle> stream_bytes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, int64_t> quotas_ ABSL_GUARDED_BY(mu_);
  // Block objects and set nodes are recycled; Note [Recycling].
  BlockRecycler recycler_ ABSL_GUARDED_BY(mu_);
  MemoryHistory history_;  // thread-safe itself; Note [Memory history]
};

// The CPU device's allocator: a CachingAllocator over HostBackend.
// `capacity`: HostBackend's (0: the machine's physical memory).
std::unique_ptr<CachingAllocator> MakeHostCachingAllocator(
    std::string device_name = "cpu", size_t capacity = 0);

// "cuda:3" -> 3; names without ":<n>" -> 0.
int DeviceIndexFromName(const std::string& device_name);

// "512 B", "1.50 KiB", "20.00 MiB", "1.00 GiB".
std::string FormatBytes(int64_t bytes);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_MEMORY_CACHING_ALLOCATOR_H_

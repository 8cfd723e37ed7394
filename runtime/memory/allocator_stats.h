// Allocator statistics, named after torch.cuda.memory_stats() so that tools
// (and people) who know PyTorch read them without a glossary.
//
// Each Stat is a running counter (current/peak/allocated/freed) kept three
// times: for all pools, for the small pool and for the large pool. Key names
// in the flat map are "<stat>.<pool>.<field>", e.g.
// "allocated_bytes.all.current", "segment.small_pool.peak".
//
// Thread safety: plain values; the owning CachingAllocator guards them with
// its mutex and hands out copies.
#ifndef TENSORD_RUNTIME_MEMORY_ALLOCATOR_STATS_H_
#define TENSORD_RUNTIME_MEMORY_ALLOCATOR_STATS_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "runtime/core/strided.h"

namespace tensord {

struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;  // total ever added
  int64_t freed = 0;      // total ever removed

  void Increase(int64_t n) {
    current += n;
    allocated += n;
    if (current > peak) peak = current;
  }
  void Decrease(int64_t n) {
    current -= n;
    freed += n;
  }
  void ResetPeak() { peak = current; }
  void ResetAccumulated() { allocated = freed = 0; }
};

enum StatPool : int { kAllPools = 0, kSmallPool = 1, kLargePool = 2 };
inline constexpr int kNumStatPools = 3;
using StatArray = std::array<Stat, kNumStatPools>;

// Updates the "all" entry and the entry of `pool` together.
inline void IncreaseStat(StatArray& s, StatPool pool, int64_t n) {
  s[kAllPools].Increase(n);
  s[pool].Increase(n);
}
inline void DecreaseStat(StatArray& s, StatPool pool, int64_t n) {
  s[kAllPools].Decrease(n);
  s[pool].Decrease(n);
}

// The counters the allocator keeps incrementally (semantics as in PyTorch):
//  allocation / allocated_bytes: blocks handed to callers and not yet freed.
//  active / active_bytes: allocated plus freed-but-pending (waiting for
//    cross-stream events); requested_bytes is the callers' requested sizes of
//    active blocks (allocated_bytes minus it is the rounding overhead).
//  segment / reserved_bytes: memory obtained from the backend.
//  inactive_split / inactive_split_bytes: free blocks inside segments that are
//    split (so they cannot be returned to the backend).
struct DeviceStats {
  StatArray allocation, segment, active, inactive_split;
  StatArray allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes,
      requested_bytes;
  int64_t num_alloc_retries = 0;  // backend misses retried after freeing cache
  int64_t num_ooms = 0;           // Allocate calls that failed for memory
  int64_t num_device_alloc = 0;   // backend Malloc calls that succeeded
  int64_t num_device_free = 0;    // backend Free calls
};

// A consistent copy of everything, taken under the allocator's lock.
struct MemoryStats {
  DeviceStats device;
  std::map<uint64_t, int64_t> session_bytes;     // allocated, per session
  std::map<StreamHandle, int64_t> stream_bytes;  // allocated, per stream
  int64_t cached_free_bytes = 0;                 // free bytes held in the pools
  int64_t largest_free_block = 0;                // largest single free block
  // 1 - largest_free_block / cached_free_bytes (0 when nothing is cached):
  // how much of the cache is unusable for one big request.
  double fragmentation = 0.0;
  int64_t capacity = 0;          // the backend's capacity
  int64_t quota_rejections = 0;  // Allocate calls refused by a quota
};

// Note [Session stats]: the part of DeviceStats that belongs to one session
// alone, kept per session by the allocator (CachingAllocator::
// SessionStatsOf) for the session protocol's GetMemoryStats, which a tenant
// without admin rights may call. Nothing here depends on another session's
// use of the device: segments, reserved and cached bytes, inactive splits
// and retries are the shared cache's (the Admin service's, MemoryStats), and
// pending frees wait on streams, so they are left out.
//  allocation / allocated_bytes / requested_bytes: the session's blocks
//    handed out and not yet freed (requested: the sizes it asked for).
//  num_ooms: its requests the device could not hold; num_quota_rejections:
//    its requests its user's quota refused.
struct SessionStats {
  StatArray allocation, allocated_bytes, requested_bytes;
  int64_t num_ooms = 0;
  int64_t num_quota_rejections = 0;
};

// Flattens to torch-style keys, as StatsToMap: "allocation.<pool>.<field>",
// "allocated_bytes...", "requested_bytes...", "num_ooms",
// "num_quota_rejections".
std::map<std::string, int64_t> SessionStatsToMap(const SessionStats& stats);

// Flattens to torch-style keys. Additions beyond torch's: "session.<id>.
// allocated_bytes", "stream.<0x..>.allocated_bytes", "cached_free_bytes",
// "largest_free_block_bytes", "fragmentation_ppm" (fragmentation × 1e6),
// "capacity_bytes", "num_quota_rejections".
std::map<std::string, int64_t> StatsToMap(const MemoryStats& stats);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_MEMORY_ALLOCATOR_STATS_H_

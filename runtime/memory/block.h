// The caching allocator's bookkeeping types and size policy (PyTorch's
// constants; see the spec at the top of caching_allocator.cc).
//
// A segment is one backend allocation. It is carved into Blocks that form a
// doubly linked list in address order (prev/next); all blocks of a segment
// share its stream and pool. Free blocks live in their pool's BlockSet,
// ordered by (stream, size, address) so that lower_bound is a best-fit search
// restricted to one stream.
//
// Thread safety: none; everything here is guarded by the owning
// CachingAllocator's mutex.
#ifndef TENSORD_RUNTIME_MEMORY_BLOCK_H_
#define TENSORD_RUNTIME_MEMORY_BLOCK_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "runtime/core/strided.h"

namespace tensord {

inline constexpr size_t kMinBlockSize = 512;             // rounding quantum
inline constexpr size_t kSmallSize = size_t{1} << 20;    // small pool: <= 1 MiB
inline constexpr size_t kSmallBuffer = size_t{2} << 20;  // small segments
inline constexpr size_t kLargeBuffer = size_t{20} << 20;    // segments for
inline constexpr size_t kMinLargeAlloc = size_t{10} << 20;  // requests < this
inline constexpr size_t kRoundLarge = size_t{2} << 20;      // larger: round to

// Requests are rounded up to a multiple of 512 bytes; 0 becomes 512 so every
// allocation has a unique address.
inline size_t RoundSize(size_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

inline bool IsSmallSize(size_t rounded) { return rounded <= kSmallSize; }

// How much to ask the backend for when no cached block fits `rounded`.
inline size_t SegmentSize(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

// Whether handing out `rounded` bytes of a free block of `block_size` bytes
// should leave the rest as a new free block. Small pool: any remainder (all
// sizes are multiples of 512); large pool: only a remainder over 1 MiB, so
// the large pool does not fill with slivers.
inline bool ShouldSplit(bool small_pool, size_t block_size, size_t rounded) {
  const size_t remaining = block_size - rounded;
  return small_pool ? remaining >= kMinBlockSize : remaining > kSmallSize;
}

// Values of Block::last_owner that are not session ids (see Note [Scrub]).
inline constexpr uint64_t kFreshMemory = std::numeric_limits<uint64_t>::max();
inline constexpr uint64_t kMixedOwners = kFreshMemory - 1;

// Whose bytes a block holds after two neighbours merge.
inline uint64_t MergeOwners(uint64_t a, uint64_t b) {
  if (a == b || b == kFreshMemory) return a;
  if (a == kFreshMemory) return b;
  return kMixedOwners;
}

struct Block;
struct SessionStats;  // allocator_stats.h

struct BlockComparator {
  bool operator()(const Block* a, const Block* b) const;
};
using BlockSet = std::set<Block*, BlockComparator>;

struct BlockPool {
  explicit BlockPool(bool small) : is_small(small) {}
  BlockSet blocks;  // free blocks only
  const bool is_small;
};

struct Block {
  void* ptr = nullptr;
  size_t size = 0;                // bytes of this block (a multiple of 512)
  size_t requested = 0;           // caller's request while active, else 0
  StreamHandle stream = nullptr;  // the segment's stream
  BlockPool* pool = nullptr;
  Block* prev = nullptr;  // neighbours within the segment
  Block* next = nullptr;
  bool allocated = false;
  // Freed by its owner but used on other streams whose events have not all
  // completed; neither allocated nor reusable.
  bool pending_free = false;
  int event_count = 0;   // outstanding events while pending_free
  uint64_t session = 0;  // owner while active
  SessionStats* session_stats = nullptr;  // its counters while allocated
  int64_t* account_bytes = nullptr;
  int64_t* stream_bytes = nullptr;
  uint64_t last_owner = kFreshMemory;     // whose bytes it holds; Note [Scrub]
  std::vector<StreamHandle> stream_uses;  // other streams (RecordStream)

  bool is_free() const { return !allocated && !pending_free; }
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

inline bool BlockComparator::operator()(const Block* a, const Block* b) const {
  const auto sa = reinterpret_cast<uintptr_t>(a->stream);
  const auto sb = reinterpret_cast<uintptr_t>(b->stream);
  if (sa != sb) return sa < sb;
  if (a->size != b->size) return a->size < b->size;
  return reinterpret_cast<uintptr_t>(a->ptr) <
         reinterpret_cast<uintptr_t>(b->ptr);
}

}  // namespace tensord

#endif  // TENSORD_RUNTIME_MEMORY_BLOCK_H_

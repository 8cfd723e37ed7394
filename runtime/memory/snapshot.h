// A point-in-time picture of an allocator's segments and blocks, plus its
// optional trace of recent actions, exportable as JSON in the shape of
// torch.cuda.memory._snapshot() so existing viewers and the CLI can draw it:
//
//   {"segments": [{"device": 0, "address": 1234, "total_size": 2097152,
//                  "allocated_size": 512, "active_size": 512,
//                  "requested_size": 100, "stream": 0,
//                  "segment_type": "small", "device_name": "cpu",
//                  "blocks": [{"address": 1234, "size": 512,
//                              "requested_size": 100,
//                              "state": "active_allocated",
//                              "owner_session": 7}, ...]}, ...],
//    "device_traces": [[{"action": "alloc", "addr": 1234, "size": 512,
//                        "stream": 0, "session": 7, "time_us": 5}, ...]]}
//
// Addresses and streams are unsigned integers. "owner_session" is null for
// inactive blocks. Plain data; no thread-safety concerns.
#ifndef TENSORD_RUNTIME_MEMORY_SNAPSHOT_H_
#define TENSORD_RUNTIME_MEMORY_SNAPSHOT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensord {

enum class BlockState { kActiveAllocated, kActivePendingFree, kInactive };

// "active_allocated", "active_pending_free" or "inactive".
const char* BlockStateName(BlockState state);

struct BlockSnapshot {
  uintptr_t address = 0;
  size_t size = 0;
  size_t requested_size = 0;  // 0 unless active
  BlockState state = BlockState::kInactive;
  std::optional<uint64_t> owner_session;  // set while active
};

struct SegmentSnapshot {
  int device = 0;
  std::string device_name;
  uintptr_t address = 0;
  size_t total_size = 0;
  size_t allocated_size = 0;  // blocks in state active_allocated
  size_t active_size = 0;     // allocated + pending free
  size_t requested_size = 0;
  uintptr_t stream = 0;
  bool is_small = false;              // "small" or "large" segment_type
  std::vector<BlockSnapshot> blocks;  // in address order, contiguous
};

// Actions as named by torch's allocator trace.
struct TraceEntry {
  std::string action;  // alloc, free_requested, free_completed,
                       // segment_alloc, segment_free, oom, empty_cache
  uintptr_t addr = 0;
  size_t size = 0;
  uintptr_t stream = 0;
  uint64_t session = 0;
  int64_t time_us = 0;  // since the allocator was created
};

struct MemorySnapshot {
  std::vector<SegmentSnapshot> segments;  // in address order
  std::vector<TraceEntry> trace;          // oldest first
};

std::string SnapshotToJson(const MemorySnapshot& snapshot);

// `s` as a JSON string literal, quotes included; escapes quotes, backslashes
// and control characters (as \uXXXX where there is no short form).
std::string JsonQuote(std::string_view s);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_MEMORY_SNAPSHOT_H_

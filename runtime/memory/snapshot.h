// A point-in-time picture of an allocator's segments and blocks, plus its
// memory history (Note [Memory history], memory_history.h), exportable as
// JSON in the shape of torch.cuda.memory._snapshot() so PyTorch's viewer
// (torch.cuda._memory_viz, pytorch.org/memory_viz) and the CLI can draw it:
//
//   {"segments": [{"device": 0, "address": 1234, "total_size": 2097152,
//                  "allocated_size": 512, "active_size": 512,
//                  "requested_size": 100, "stream": 0,
//                  "segment_type": "small", "device_name": "cpu",
//                  "blocks": [{"address": 1234, "size": 512,
//                              "requested_size": 100,
//                              "state": "active_allocated",
//                              "owner_session": 7}, ...]}, ...],
//    "device_traces": [[], ..., [{"action": "alloc", "addr": 1234,
//                        "size": 100, "stream": 0, "time_us": 5,
//                        "session": 7, "category": "session s-7",
//                        "frames": [{"filename": "train.py", "line": 42,
//                                    "name": "session s-7"}]}, ...]]}
//
// device_traces has one list per device index up to this snapshot's device
// (the viewer pairs segments[i].device with device_traces[device]); only the
// last is filled. An event's "frames" is its client call site ("train.py:42"
// split at the last colon) named after the session, and "category" is the
// session: the viewer colours the Active Memory Timeline by category and
// lists the sessions in its legend. Events of no session (the daemon's own,
// segment_free, the closing "snapshot") are category "unknown", which
// PyTorch's viewer expects among the categories whenever there are any.
// "oom" carries "device_free" where other actions carry "addr", as PyTorch.
//
// Addresses and streams are unsigned integers. "owner_session" is null for
// inactive blocks. Plain data; no thread-safety concerns.
#ifndef TENSORD_RUNTIME_MEMORY_SNAPSHOT_H_
#define TENSORD_RUNTIME_MEMORY_SNAPSHOT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
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

// Actions as named by torch's allocator trace (empty_cache is tensord's).
enum class TraceAction : uint8_t {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kOom,
  kEmptyCache,
  kSnapshot,  // closes a snapshot's trace: the instant its segments show
};
const char* TraceActionName(TraceAction action);

struct TraceEntry {
  TraceAction action = TraceAction::kAlloc;
  uintptr_t addr = 0;  // kOom: the device's free bytes ("device_free")
  size_t size = 0;     // alloc/free: bytes requested; segment: its size
  uintptr_t stream = 0;
  uint64_t session = 0;  // 0: the daemon itself, or no session
  int64_t time_us = 0;   // since the Unix epoch, as PyTorch's
  // The client call site, shared with the session's interned text (Note
  // [Site ids] in server/call_sites.cc); null when none is known.
  std::shared_ptr<const std::string> site;
};

struct MemorySnapshot {
  int device = 0;                         // the allocator's device index
  std::vector<SegmentSnapshot> segments;  // in address order
  std::vector<TraceEntry> trace;          // oldest first
};

// How a session number is shown ("s-3f2a", "#7"); null: the number itself.
using SessionNamer = std::function<std::string(uint64_t)>;

std::string SnapshotToJson(const MemorySnapshot& snapshot,
                           const SessionNamer& session_name = nullptr);

// `s` as a JSON string literal, quotes included; escapes quotes, backslashes
// and control characters (as \uXXXX where there is no short form).
std::string JsonQuote(std::string_view s);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_MEMORY_SNAPSHOT_H_

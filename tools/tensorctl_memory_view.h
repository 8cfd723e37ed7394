// Renders the Admin memory RPCs for people and scripts: the summary of
// `tensorctl memory` (in the spirit of torch.cuda.memory_summary()) and its
// shared-buffer section, the segment map of `tensorctl segments`, and their
// --json forms. Pure functions of the responses; no I/O, so
// tensorctl_memory_view_test checks them on hand-built protos.
#ifndef TENSORD_TOOLS_TENSORCTL_MEMORY_VIEW_H_
#define TENSORD_TOOLS_TENSORCTL_MEMORY_VIEW_H_

#include <string>

#include "proto/admin.pb.h"

namespace tensord {
namespace tensorctl {

// "cuda:0" for a device's own memory, "cuda:0 pinned staging" for its
// staging pool (DeviceMemoryStats.pool): the name each view shows.
std::string PoolLabel(const v1::DeviceMemoryStats& d);

// One pool's summary (a device, or its pinned staging cache): a table of
// allocated / active / requested / reserved / inactive_split bytes and their
// counts, each × current / peak / allocated / freed, with large- and small-pool
// rows; then the retry, OOM and backend counters, the largest free block and
// fragmentation; then the sessions that hold memory, largest first, with user
// and client from `sessions` (a session missing there, e.g. "#7" once ended,
// shows "-").
std::string FormatMemorySummary(const v1::DeviceMemoryStats& device,
                                const v1::ListSessionsResponse& sessions);

// The shared host buffers of every session (MemoryStatsResponse's
// shared_buffers), apart from the device pools: their count and bytes, then
// the sessions holding any, largest first, with user and client from
// `sessions` as in FormatMemorySummary.
std::string FormatSharedBuffers(const v1::SharedBufferStats& shared,
                                const v1::ListSessionsResponse& sessions);

// {"devices":[{"device":..,("pool":.. for a staging
// pool),"stats":{key:value,..} (every raw stat, sorted),
//   "sessions":[{"session_id","user","client_name","allocated_bytes"},..]}]
//  (,"shared_buffers":{"count","bytes","sessions":[{"session_id","user",
//   "client_name","buffers","bytes"},..]} when the response has them)}
std::string MemoryStatsJson(const v1::MemoryStatsResponse& stats,
                            const v1::ListSessionsResponse& sessions);

// Glyphs of the segment map.
inline constexpr char kAllocatedGlyph = '#';
inline constexpr char kPendingFreeGlyph = '+';
inline constexpr char kFreeGlyph = '.';

// The segment map: a header with totals and the legend, then per segment one
// line (address, pool, size, a `bar_width`-character bar of its blocks,
// allocated bytes) followed by one line per block (address, size, state,
// owning session, requested size).
std::string FormatSegments(const v1::MemorySnapshotResponse& snapshot,
                           int bar_width);

// {"device":..,"segments":[{"address",..,"blocks":[{..,"session_id"}]}]}:
// the structured snapshot with session ids (the `json` field, by contrast,
// is torch's shape with session numbers).
std::string SegmentsJson(const v1::MemorySnapshotResponse& snapshot);

}  // namespace tensorctl
}  // namespace tensord

#endif  // TENSORD_TOOLS_TENSORCTL_MEMORY_VIEW_H_

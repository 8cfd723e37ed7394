// Rendering for `tensorctl profile`: a session's op records (OpRecord in
// proto/tensord.proto) as a per-op table of phase times, as JSON, and as a
// Chrome/Perfetto trace. Pure functions; no I/O.
#ifndef TENSORD_TOOLS_TENSORCTL_PROFILE_VIEW_H_
#define TENSORD_TOOLS_TENSORCTL_PROFILE_VIEW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/tensord.pb.h"

namespace tensord {
namespace tensorctl {

// Every record of one (op, device), phase times summed in nanoseconds.
struct OpSummary {
  std::string op;
  std::string device;
  uint64_t calls = 0;
  uint64_t wall_ns = 0;
  uint64_t wait_ns = 0;
  uint64_t decode_ns = 0;
  uint64_t infer_ns = 0;
  uint64_t alloc_ns = 0;
  uint64_t kernel_ns = 0;
  uint64_t bytes_allocated = 0;
  // Within wall_ns but in no phase: autograd recording, the Ack entry.
  uint64_t other_ns() const;
};

// Grouped by (op, device), the largest wall time first (ties by name).
std::vector<OpSummary> SummarizeProfile(const v1::Profile& profile);

// The graph nodes backward passes ran, grouped by name, the largest first.
struct NodeSummary {
  std::string name;
  uint64_t calls = 0;
  uint64_t wall_ns = 0;
};
std::vector<NodeSummary> SummarizeNodes(const v1::Profile& profile);

// The table: per op, calls, total and average wall time and the share of
// each phase (average per call), then a total line, a note on dropped
// records, a table of the backward passes' graph nodes, and one of the
// client's CPU fallbacks (Note [Client fallbacks]). At most `limit` rows per
// op and node table (0: all).
std::string FormatProfile(const v1::Profile& profile, int limit);

// {"ops":[{"op":..,"device":..,"calls":..,"wall_ns":..,...}],"dropped":N,
//  "fallbacks":{"aten.cummax.default":2,...}}
std::string ProfileJson(const v1::Profile& profile);

// Chrome trace JSON (chrome://tracing, ui.perfetto.dev): one complete ("X")
// event per op on its device's track, with its phases nested inside in order
// (decode, infer, alloc, kernel) or, for a backward, the graph nodes it ran at
// their real times; the queue wait, the call site and the bytes
// allocated are the op's args (waits of one batch overlap, so they get no
// slices). Times in microseconds since profiling started.
std::string ProfileTraceJson(const v1::Profile& profile,
                             const std::string& session_id);

}  // namespace tensorctl
}  // namespace tensord

#endif  // TENSORD_TOOLS_TENSORCTL_PROFILE_VIEW_H_

// One frame of `tensorctl top`: the daemon line, device totals, the shared
// host buffers' total, and the sessions (user, state, handles, ops, queue
// depth, memory per device, shared-buffer bytes), largest memory (device
// and shared) first. Pure functions of the three Admin responses that
// make up a frame; tensorctl_top.cc fetches and repaints.
#ifndef TENSORD_TOOLS_TENSORCTL_TOP_VIEW_H_
#define TENSORD_TOOLS_TENSORCTL_TOP_VIEW_H_

#include <string>

#include "absl/time/time.h"
#include "proto/admin.pb.h"

namespace tensord {
namespace tensorctl {

struct TopFrame {
  std::string address;  // what tensorctl connected to
  absl::Time time;      // when the frame was fetched
  v1::ServerInfoResponse info;
  v1::MemoryStatsResponse memory;
  v1::ListSessionsResponse sessions;
};

// Moves the cursor home and clears the screen (ANSI), for a live refresh.
inline constexpr char kClearScreen[] = "\033[H\033[2J";

// The frame as text (no escape codes; the caller clears the screen).
std::string FormatTopFrame(const TopFrame& frame);

// The frame as one JSON object (one line per refresh under --json):
// {"time","address","version","uptime_seconds","devices":[..],
//  ("shared_buffers":{"count","bytes"},)
//  "sessions":[{..,"memory_bytes":{device:bytes},"shared_buffers",
//  "shared_buffer_bytes"}]}.
std::string TopFrameJson(const TopFrame& frame);

}  // namespace tensorctl
}  // namespace tensord

#endif  // TENSORD_TOOLS_TENSORCTL_TOP_VIEW_H_

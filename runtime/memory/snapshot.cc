// Hand-written JSON for MemorySnapshot (there is no JSON library in the
// build). Numbers are written as integers; strings go through JsonQuote.
#include "runtime/memory/snapshot.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tensord {

const char* BlockStateName(BlockState state) {
  switch (state) {
    case BlockState::kActiveAllocated:
      return "active_allocated";
    case BlockState::kActivePendingFree:
      return "active_pending_free";
    case BlockState::kInactive:
      return "inactive";
  }
  return "inactive";
}

std::string JsonQuote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  out += "\"";
  return out;
}

namespace {

void AppendBlock(std::string& out, const BlockSnapshot& b) {
  absl::StrAppend(&out, "{\"address\":", b.address, ",\"size\":", b.size,
                  ",\"requested_size\":", b.requested_size,
                  ",\"state\":", JsonQuote(BlockStateName(b.state)),
                  ",\"owner_session\":");
  if (b.owner_session.has_value()) {
    absl::StrAppend(&out, *b.owner_session);
  } else {
    out += "null";
  }
  out += "}";
}

void AppendSegment(std::string& out, const SegmentSnapshot& s) {
  absl::StrAppend(&out, "{\"device\":", s.device,
                  ",\"device_name\":", JsonQuote(s.device_name),
                  ",\"address\":", s.address, ",\"total_size\":", s.total_size,
                  ",\"allocated_size\":", s.allocated_size,
                  ",\"active_size\":", s.active_size,
                  ",\"requested_size\":", s.requested_size,
                  ",\"stream\":", s.stream, ",\"segment_type\":",
                  JsonQuote(s.is_small ? "small" : "large"), ",\"blocks\":[");
  for (size_t i = 0; i < s.blocks.size(); ++i) {
    if (i > 0) out += ",";
    AppendBlock(out, s.blocks[i]);
  }
  out += "]}";
}

void AppendTrace(std::string& out, const TraceEntry& t) {
  absl::StrAppend(&out, "{\"action\":", JsonQuote(t.action),
                  ",\"addr\":", t.addr, ",\"size\":", t.size,
                  ",\"stream\":", t.stream, ",\"session\":", t.session,
                  ",\"time_us\":", t.time_us, "}");
}

}  // namespace

std::string SnapshotToJson(const MemorySnapshot& snapshot) {
  std::string out = "{\"segments\":[";
  for (size_t i = 0; i < snapshot.segments.size(); ++i) {
    if (i > 0) out += ",";
    AppendSegment(out, snapshot.segments[i]);
  }
  out += "],\"device_traces\":[[";
  for (size_t i = 0; i < snapshot.trace.size(); ++i) {
    if (i > 0) out += ",";
    AppendTrace(out, snapshot.trace[i]);
  }
  out += "]]}";
  return out;
}

}  // namespace tensord

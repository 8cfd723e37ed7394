// Hand-written JSON for MemorySnapshot (there is no JSON library in the
// build). Numbers are written as integers; strings go through JsonQuote.
#include "runtime/memory/snapshot.h"

#include <unordered_map>

#include "absl/strings/numbers.h"
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

const char* TraceActionName(TraceAction action) {
  switch (action) {
    case TraceAction::kAlloc:
      return "alloc";
    case TraceAction::kFreeRequested:
      return "free_requested";
    case TraceAction::kFreeCompleted:
      return "free_completed";
    case TraceAction::kSegmentAlloc:
      return "segment_alloc";
    case TraceAction::kSegmentFree:
      return "segment_free";
    case TraceAction::kOom:
      return "oom";
    case TraceAction::kEmptyCache:
      return "empty_cache";
    case TraceAction::kSnapshot:
      return "snapshot";
  }
  return "alloc";
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

// Session numbers as shown, each looked up once per snapshot.
class SessionLabels {
 public:
  explicit SessionLabels(const SessionNamer& name) : name_(name) {}

  // "unknown" for no session (see snapshot.h), else "session ID".
  const std::string& Category(uint64_t session) {
    auto [it, inserted] = labels_.try_emplace(session);
    if (inserted) {
      it->second = session == 0 ? "unknown"
                   : name_      ? absl::StrCat("session ", name_(session))
                                : absl::StrCat("session ", session);
    }
    return it->second;
  }

 private:
  const SessionNamer& name_;
  std::unordered_map<uint64_t, std::string> labels_;
};

// One frame: the call site "file.py:42" as file and line, named after the
// session (PyTorch's frames are {filename, line, name}).
void AppendFrames(std::string& out, const TraceEntry& t,
                  const std::string& category) {
  absl::string_view file = "<no call site>";
  int64_t line = 0;
  if (t.site != nullptr && !t.site->empty()) {
    file = *t.site;
    const size_t colon = file.rfind(':');
    if (colon != absl::string_view::npos &&
        absl::SimpleAtoi(file.substr(colon + 1), &line)) {
      file = file.substr(0, colon);
    } else {
      line = 0;
    }
  }
  absl::StrAppend(
      &out, ",\"frames\":[{\"filename\":",
      JsonQuote(std::string_view(file.data(), file.size())), ",\"line\":", line,
      ",\"name\":", JsonQuote(t.session == 0 ? "tensord" : category), "}]");
}

void AppendTrace(std::string& out, const TraceEntry& t, SessionLabels& labels) {
  const std::string& category = labels.Category(t.session);
  absl::StrAppend(
      &out, "{\"action\":", JsonQuote(TraceActionName(t.action)),
      t.action == TraceAction::kOom ? ",\"device_free\":" : ",\"addr\":",
      t.addr, ",\"size\":", t.size, ",\"stream\":", t.stream,
      ",\"time_us\":", t.time_us, ",\"session\":", t.session,
      ",\"category\":", JsonQuote(category));
  AppendFrames(out, t, category);
  out += "}";
}

}  // namespace

std::string SnapshotToJson(const MemorySnapshot& snapshot,
                           const SessionNamer& session_name) {
  std::string out = "{\"segments\":[";
  for (size_t i = 0; i < snapshot.segments.size(); ++i) {
    if (i > 0) out += ",";
    AppendSegment(out, snapshot.segments[i]);
  }
  out += "],\"device_traces\":[";
  for (int d = 0; d < snapshot.device; ++d) out += "[],";
  out += "[";
  SessionLabels labels(session_name);
  for (size_t i = 0; i < snapshot.trace.size(); ++i) {
    if (i > 0) out += ",";
    AppendTrace(out, snapshot.trace[i], labels);
  }
  out += "]]}";
  return out;
}

}  // namespace tensord

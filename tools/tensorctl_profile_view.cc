#include "tools/tensorctl_profile_view.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/tensorctl_format.h"

namespace tensord {
namespace tensorctl {
namespace {

// 1234567 ns -> "1.235ms".
std::string Nanos(double ns) {
  if (ns >= 1e9) return absl::StrFormat("%.3fs", ns / 1e9);
  if (ns >= 1e6) return absl::StrFormat("%.3fms", ns / 1e6);
  return absl::StrFormat("%.1fus", ns / 1e3);
}

std::string Micros(uint64_t ns) { return absl::StrFormat("%.3f", ns / 1e3); }

// One "X" event; `args` is a JSON object or empty.
std::string TraceEvent(const std::string& name, const std::string& cat,
                       uint64_t ts_ns, uint64_t dur_ns, const std::string& pid,
                       const std::string& tid, const std::string& args) {
  std::string event = absl::StrCat(
      "{\"name\":", JsonString(name), ",\"cat\":", JsonString(cat),
      ",\"ph\":\"X\",\"ts\":", Micros(ts_ns), ",\"dur\":", Micros(dur_ns),
      ",\"pid\":", JsonString(pid), ",\"tid\":", JsonString(tid));
  if (!args.empty()) absl::StrAppend(&event, ",\"args\":", args);
  return event + "}";
}

// Note [Client fallbacks]: the ops the session's client ran on its own CPU
// while profiling, as it reported them (the daemon never saw them run).
std::string FormatFallbacks(const v1::Profile& profile) {
  if (profile.fallbacks().empty()) return "";
  Table table({"CLIENT CPU FALLBACK", ">CALLS"});
  uint64_t total = 0;
  for (const v1::FallbackCount& f : profile.fallbacks()) {
    table.AddRow({f.op(), absl::StrCat(f.count())});
    total += f.count();
  }
  return absl::StrCat("\n", table.ToString(), total,
                      " op call(s) ran on the client's CPU instead of the "
                      "daemon (reported by the client)\n");
}

}  // namespace

uint64_t OpSummary::other_ns() const {
  const uint64_t phases = decode_ns + infer_ns + alloc_ns + kernel_ns;
  return wall_ns > phases ? wall_ns - phases : 0;
}

std::vector<OpSummary> SummarizeProfile(const v1::Profile& profile) {
  std::map<std::pair<std::string, std::string>, OpSummary> groups;
  for (const v1::OpRecord& r : profile.ops()) {
    OpSummary& s = groups[{r.op(), r.device()}];
    s.op = r.op();
    s.device = r.device();
    ++s.calls;
    s.wall_ns += r.wall_ns();
    s.wait_ns += r.wait_ns();
    s.decode_ns += r.decode_ns();
    s.infer_ns += r.infer_ns();
    s.alloc_ns += r.alloc_ns();
    s.kernel_ns += r.kernel_ns();
    s.bytes_allocated += r.bytes_allocated();
  }
  std::vector<OpSummary> out;
  out.reserve(groups.size());
  for (auto& [key, s] : groups) out.push_back(std::move(s));
  std::stable_sort(out.begin(), out.end(),
                   [](const OpSummary& a, const OpSummary& b) {
                     return a.wall_ns > b.wall_ns;
                   });
  return out;
}

std::vector<NodeSummary> SummarizeNodes(const v1::Profile& profile) {
  std::map<std::string, NodeSummary> groups;
  for (const v1::OpRecord& r : profile.ops()) {
    for (const v1::OpSpan& node : r.nodes()) {
      NodeSummary& s = groups[node.name()];
      s.name = node.name();
      ++s.calls;
      s.wall_ns += node.wall_ns();
    }
  }
  std::vector<NodeSummary> out;
  for (auto& [name, s] : groups) out.push_back(std::move(s));
  std::stable_sort(out.begin(), out.end(),
                   [](const NodeSummary& a, const NodeSummary& b) {
                     return a.wall_ns > b.wall_ns;
                   });
  return out;
}

std::string FormatProfile(const v1::Profile& profile, int limit) {
  const std::vector<OpSummary> ops = SummarizeProfile(profile);
  if (ops.empty()) {
    return absl::StrCat(
        "no ops recorded (did the session run anything meanwhile?)\n",
        FormatFallbacks(profile));
  }
  Table table({"OP", "DEVICE", ">CALLS", ">TOTAL", ">AVG", ">WAIT", ">DECODE",
               ">INFER", ">ALLOC", ">KERNEL", ">OTHER", ">ALLOCATED"});
  OpSummary total;
  int rows = 0;
  for (const OpSummary& s : ops) {
    total.calls += s.calls;
    total.wall_ns += s.wall_ns;
    total.wait_ns += s.wait_ns;
    total.decode_ns += s.decode_ns;
    total.infer_ns += s.infer_ns;
    total.alloc_ns += s.alloc_ns;
    total.kernel_ns += s.kernel_ns;
    total.bytes_allocated += s.bytes_allocated;
    if (limit > 0 && rows >= limit) continue;
    ++rows;
    const double n = static_cast<double>(s.calls);
    table.AddRow({s.op, s.device, absl::StrCat(s.calls), Nanos(s.wall_ns),
                  Nanos(s.wall_ns / n), Nanos(s.wait_ns / n),
                  Nanos(s.decode_ns / n), Nanos(s.infer_ns / n),
                  Nanos(s.alloc_ns / n), Nanos(s.kernel_ns / n),
                  Nanos(s.other_ns() / n), HumanBytes(s.bytes_allocated)});
  }
  std::string text = table.ToString();
  const double wall = std::max<double>(1.0, total.wall_ns);
  absl::StrAppend(
      &text, absl::StrFormat(
                 "%d op(s) in %d row(s)%s; time in ops %s: decode %s, "
                 "infer %s, alloc %s, kernel %s, other %s; queued %s\n",
                 total.calls, ops.size(),
                 rows < static_cast<int>(ops.size())
                     ? absl::StrCat(" (", rows, " shown)")
                     : "",
                 Nanos(total.wall_ns), Percent(total.decode_ns / wall),
                 Percent(total.infer_ns / wall), Percent(total.alloc_ns / wall),
                 Percent(total.kernel_ns / wall),
                 Percent(total.other_ns() / wall), Nanos(total.wait_ns)));
  if (profile.dropped() > 0) {
    absl::StrAppend(&text, profile.dropped(),
                    " record(s) dropped over the daemon's cap\n");
  }
  const std::vector<NodeSummary> nodes = SummarizeNodes(profile);
  if (!nodes.empty()) {
    Table node_table({"BACKWARD NODE", ">CALLS", ">TOTAL", ">AVG"});
    int shown = 0;
    for (const NodeSummary& n : nodes) {
      if (limit > 0 && shown++ >= limit) break;
      node_table.AddRow({n.name, absl::StrCat(n.calls), Nanos(n.wall_ns),
                         Nanos(n.wall_ns / static_cast<double>(n.calls))});
    }
    absl::StrAppend(&text, "\n", node_table.ToString());
  }
  return text + FormatFallbacks(profile);
}

std::string ProfileJson(const v1::Profile& profile) {
  std::vector<std::string> ops;
  for (const OpSummary& s : SummarizeProfile(profile)) {
    ops.push_back(JsonObject()
                      .Add("op", s.op)
                      .Add("device", s.device)
                      .Add("calls", s.calls)
                      .Add("wall_ns", s.wall_ns)
                      .Add("wait_ns", s.wait_ns)
                      .Add("decode_ns", s.decode_ns)
                      .Add("infer_ns", s.infer_ns)
                      .Add("alloc_ns", s.alloc_ns)
                      .Add("kernel_ns", s.kernel_ns)
                      .Add("other_ns", s.other_ns())
                      .Add("bytes_allocated", s.bytes_allocated)
                      .ToString());
  }
  JsonObject fallbacks;  // sorted by name, as the daemon sends them
  for (const v1::FallbackCount& f : profile.fallbacks()) {
    fallbacks.Add(f.op(), f.count());
  }
  return JsonObject()
      .AddRaw("ops", JsonArray(ops))
      .Add("dropped", profile.dropped())
      .AddRaw("fallbacks", fallbacks.ToString())
      .ToString();
}

std::string ProfileTraceJson(const v1::Profile& profile,
                             const std::string& session_id) {
  const std::string pid = absl::StrCat("tensord session ", session_id);
  std::vector<std::string> events;
  for (const v1::OpRecord& r : profile.ops()) {
    const std::string args = JsonObject()
                                 .Add("site", r.site())
                                 .Add("bytes_allocated", r.bytes_allocated())
                                 .Add("wait_us", r.wait_ns() / 1e3)
                                 .ToString();
    events.push_back(TraceEvent(r.op(), "op", r.start_ns(), r.wall_ns(), pid,
                                r.device(), args));
    // A backward shows the graph nodes it ran, at their real times.
    for (const v1::OpSpan& node : r.nodes()) {
      events.push_back(TraceEvent(node.name(), "node", node.start_ns(),
                                  node.wall_ns(), pid, r.device(),
                                  std::string()));
    }
    if (r.nodes_size() > 0) continue;
    // Phases laid end to end inside the op (exact for a single op; a
    // composite's inner ops interleave them, so theirs are summed).
    uint64_t at = r.start_ns();
    const std::pair<const char*, uint64_t> phases[] = {
        {"decode", r.decode_ns()},
        {"infer", r.infer_ns()},
        {"alloc", r.alloc_ns()},
        {"kernel", r.kernel_ns()}};
    for (const auto& [name, ns] : phases) {
      if (ns == 0) continue;
      events.push_back(
          TraceEvent(name, "phase", at, ns, pid, r.device(), std::string()));
      at += ns;
    }
  }
  return JsonObject()
      .AddRaw("traceEvents", JsonArray(events))
      .Add("displayTimeUnit", "ms")
      .ToString();
}

}  // namespace tensorctl
}  // namespace tensord

#include "tools/tensorctl_top_view.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "tools/tensorctl_format.h"

namespace tensord {
namespace tensorctl {
namespace {

int64_t StatOf(const v1::DeviceMemoryStats& d, const char* key) {
  const auto it = d.stats().find(key);
  return it == d.stats().end() ? 0 : it->second;
}

std::string Bytes(int64_t value) {
  return value > 0 ? HumanBytes(static_cast<uint64_t>(value)) : "0 B";
}

uint64_t TotalBytes(const v1::SessionInfo& s) {
  uint64_t total = s.shared_buffer_bytes();
  for (const auto& [device, bytes] : s.memory_bytes()) total += bytes;
  return total;
}

// Sessions by memory held, largest first; ties by id so frames are stable.
std::vector<const v1::SessionInfo*> SortedSessions(const TopFrame& frame) {
  std::vector<const v1::SessionInfo*> out;
  for (const v1::SessionInfo& s : frame.sessions.sessions()) out.push_back(&s);
  std::sort(out.begin(), out.end(), [](const auto* a, const auto* b) {
    const uint64_t ta = TotalBytes(*a), tb = TotalBytes(*b);
    return ta != tb ? ta > tb : a->session_id() < b->session_id();
  });
  return out;
}

}  // namespace

std::string FormatTopFrame(const TopFrame& frame) {
  const v1::ServerInfoResponse& info = frame.info;
  std::string out = absl::StrCat(
      "tensord ", info.version(), " at ", frame.address, "  up ",
      HumanDuration(info.uptime_seconds()), "  ", info.active_sessions(),
      info.active_sessions() == 1 ? " session  " : " sessions  ",
      absl::FormatTime("%H:%M:%S", frame.time, absl::LocalTimeZone()), "\n\n");

  Table devices({"DEVICE", ">ALLOCATED", ">PEAK", ">RESERVED", ">CAPACITY",
                 ">SEGMENTS", ">FRAG", ">OOMS"});
  for (const v1::DeviceMemoryStats& d : frame.memory.devices()) {
    const int64_t capacity = StatOf(d, "capacity_bytes");
    devices.AddRow({d.pool().empty() ? d.device()
                                     : absl::StrCat(d.device(), " ", d.pool()),
                    Bytes(StatOf(d, "allocated_bytes.all.current")),
                    Bytes(StatOf(d, "allocated_bytes.all.peak")),
                    Bytes(StatOf(d, "reserved_bytes.all.current")),
                    capacity > 0 ? Bytes(capacity) : "-",
                    absl::StrCat(StatOf(d, "segment.all.current")),
                    Percent(StatOf(d, "fragmentation_ppm") / 1e6),
                    absl::StrCat(StatOf(d, "num_ooms"))});
  }
  absl::StrAppend(&out, devices.ToString());
  // Host memory of no device pool: a line of its own.
  const bool shared = frame.memory.has_shared_buffers();
  if (shared) {
    const v1::SharedBufferStats& s = frame.memory.shared_buffers();
    absl::StrAppend(&out, "shared buffers: ", s.count(), " (",
                    HumanBytes(s.bytes()), ", host memory in the cpu quota)\n");
  }
  absl::StrAppend(&out, "\n");

  if (frame.sessions.sessions_size() == 0) {
    absl::StrAppend(&out, "no sessions\n");
    return out;
  }
  // One memory column per device, in the device table's order.
  std::vector<std::string> headers = {"SESSION",  "USER", "CLIENT", "STATE",
                                      ">HANDLES", ">OPS", ">QUEUE"};
  for (const v1::DeviceMemoryStats& d : frame.memory.devices()) {
    if (!d.pool().empty()) continue;  // staging: no session owns it
    headers.push_back(absl::StrCat(">", absl::AsciiStrToUpper(d.device())));
  }
  if (shared) headers.push_back(">SHARED");
  Table table(std::move(headers));
  for (const v1::SessionInfo* s : SortedSessions(frame)) {
    std::vector<std::string> row = {
        s->session_id(),
        s->user().empty() ? "-" : s->user(),
        s->client_name().empty() ? "-" : s->client_name(),
        s->state(),
        absl::StrCat(s->live_handles()),
        absl::StrCat(s->ops_run()),
        absl::StrCat(s->queue_depth())};
    for (const v1::DeviceMemoryStats& d : frame.memory.devices()) {
      if (!d.pool().empty()) continue;
      const auto it = s->memory_bytes().find(d.device());
      row.push_back(it == s->memory_bytes().end() ? "-"
                                                  : HumanBytes(it->second));
    }
    if (shared) {
      row.push_back(s->shared_buffers() == 0
                        ? "-"
                        : HumanBytes(s->shared_buffer_bytes()));
    }
    table.AddRow(std::move(row));
  }
  absl::StrAppend(&out, table.ToString());
  return out;
}

std::string TopFrameJson(const TopFrame& frame) {
  std::vector<std::string> devices;
  for (const v1::DeviceMemoryStats& d : frame.memory.devices()) {
    JsonObject entry;
    entry.Add("device", d.device());
    if (!d.pool().empty()) entry.Add("pool", d.pool());
    devices.push_back(
        entry.Add("allocated_bytes", StatOf(d, "allocated_bytes.all.current"))
            .Add("peak_allocated_bytes", StatOf(d, "allocated_bytes.all.peak"))
            .Add("reserved_bytes", StatOf(d, "reserved_bytes.all.current"))
            .Add("capacity_bytes", StatOf(d, "capacity_bytes"))
            .Add("segments", StatOf(d, "segment.all.current"))
            .Add("fragmentation", StatOf(d, "fragmentation_ppm") / 1e6)
            .Add("num_ooms", StatOf(d, "num_ooms"))
            .ToString());
  }
  std::vector<std::string> sessions;
  for (const v1::SessionInfo* s : SortedSessions(frame)) {
    JsonObject memory;
    const std::map<std::string, uint64_t> sorted(s->memory_bytes().begin(),
                                                 s->memory_bytes().end());
    for (const auto& [device, bytes] : sorted) memory.Add(device, bytes);
    sessions.push_back(JsonObject()
                           .Add("session_id", s->session_id())
                           .Add("user", s->user())
                           .Add("client_name", s->client_name())
                           .Add("state", s->state())
                           .Add("live_handles", s->live_handles())
                           .Add("ops_run", s->ops_run())
                           .Add("queue_depth", s->queue_depth())
                           .AddRaw("memory_bytes", memory.ToString())
                           .Add("shared_buffers", s->shared_buffers())
                           .Add("shared_buffer_bytes", s->shared_buffer_bytes())
                           .ToString());
  }
  JsonObject out;
  out.Add("time",
          absl::FormatTime(absl::RFC3339_sec, frame.time, absl::UTCTimeZone()))
      .Add("address", frame.address)
      .Add("version", frame.info.version())
      .Add("uptime_seconds", frame.info.uptime_seconds())
      .AddRaw("devices", JsonArray(devices));
  if (frame.memory.has_shared_buffers()) {
    out.AddRaw("shared_buffers",
               JsonObject()
                   .Add("count", frame.memory.shared_buffers().count())
                   .Add("bytes", frame.memory.shared_buffers().bytes())
                   .ToString());
  }
  return out.AddRaw("sessions", JsonArray(sessions)).ToString();
}

}  // namespace tensorctl
}  // namespace tensord

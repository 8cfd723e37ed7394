#include "tools/tensorctl_memory_view.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/tensorctl_format.h"

namespace tensord {
namespace tensorctl {
namespace {

// A row group of the summary: the stat's key prefix in
// torch.cuda.memory_stats() and whether it counts bytes or blocks.
struct StatRow {
  const char* label;
  const char* key;
  bool bytes;
};

constexpr StatRow kStatRows[] = {
    {"Allocated memory", "allocated_bytes", true},
    {"Active memory", "active_bytes", true},
    {"Requested memory", "requested_bytes", true},
    {"Reserved memory", "reserved_bytes", true},
    {"Non-releasable memory", "inactive_split_bytes", true},
    {"Allocations", "allocation", false},
    {"Active allocs", "active", false},
    {"Reserved segments", "segment", false},
    {"Non-releasable allocs", "inactive_split", false},
};

constexpr std::pair<const char*, const char*> kPools[] = {
    {"all", ""},
    {"large_pool", "  from large pool"},
    {"small_pool", "  from small pool"},
};

constexpr const char* kFields[] = {"current", "peak", "allocated", "freed"};

int64_t StatOf(const v1::DeviceMemoryStats& d, const std::string& key) {
  const auto it = d.stats().find(key);
  return it == d.stats().end() ? 0 : it->second;
}

std::string Amount(int64_t value, bool bytes) {
  if (!bytes) return absl::StrCat(value);
  return value < 0 ? absl::StrCat(value, " B")
                   : HumanBytes(static_cast<uint64_t>(value));
}

// A table without its header line, for key/value blocks.
std::string Body(const Table& table) {
  const std::string text = table.ToString();
  return text.substr(text.find('\n') + 1);
}

const v1::SessionInfo* FindSession(const v1::ListSessionsResponse& sessions,
                                   const std::string& id) {
  for (const v1::SessionInfo& s : sessions.sessions()) {
    if (s.session_id() == id) return &s;
  }
  return nullptr;
}

// A JSON entry for session `id` naming its user and client (empty when the
// session is not listed any more); the caller adds its figures.
JsonObject SessionJson(const v1::ListSessionsResponse& sessions,
                       const std::string& id) {
  const v1::SessionInfo* s = FindSession(sessions, id);
  JsonObject entry;
  entry.Add("session_id", id)
      .Add("user", s ? s->user() : "")
      .Add("client_name", s ? s->client_name() : "");
  return entry;
}

// The sessions of a session id -> bytes map (a pool's or the shared
// buffers'), largest first (ties by id).
template <typename Bytes>
std::vector<std::pair<std::string, Bytes>> SessionsBySize(
    const google::protobuf::Map<std::string, Bytes>& session_bytes) {
  std::vector<std::pair<std::string, Bytes>> out(session_bytes.begin(),
                                                 session_bytes.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return out;
}

uint64_t BuffersOf(const v1::SharedBufferStats& shared, const std::string& id) {
  const auto it = shared.session_count().find(id);
  return it == shared.session_count().end() ? 0 : it->second;
}

char GlyphOf(const std::string& state) {
  if (state == "active_allocated") return kAllocatedGlyph;
  if (state == "active_pending_free") return kPendingFreeGlyph;
  return kFreeGlyph;
}

}  // namespace

std::string PoolLabel(const v1::DeviceMemoryStats& d) {
  return d.pool().empty() ? d.device()
                          : absl::StrCat(d.device(), " ", d.pool());
}

std::string FormatMemorySummary(const v1::DeviceMemoryStats& d,
                                const v1::ListSessionsResponse& sessions) {
  const std::string title = absl::StrCat("memory summary: ", PoolLabel(d));
  std::string out =
      absl::StrCat(title, "\n", std::string(title.size(), '='), "\n");
  Table stats({"METRIC", ">CURRENT", ">PEAK", ">TOTAL ALLOC", ">TOTAL FREED"});
  bool first = true;
  for (const StatRow& row : kStatRows) {
    if (!first) stats.AddRow({});  // a blank line between groups
    first = false;
    for (const auto& [pool, pool_label] : kPools) {
      std::vector<std::string> cells = {pool_label[0] ? pool_label : row.label};
      for (const char* field : kFields) {
        cells.push_back(
            Amount(StatOf(d, absl::StrCat(row.key, ".", pool, ".", field)),
                   row.bytes));
      }
      stats.AddRow(std::move(cells));
    }
  }
  absl::StrAppend(&out, stats.ToString(), "\n");

  const int64_t capacity = StatOf(d, "capacity_bytes");
  Table counters({"", ">"});
  for (const char* key : {"num_alloc_retries", "num_ooms", "num_device_alloc",
                          "num_device_free", "num_quota_rejections"}) {
    counters.AddRow({key, absl::StrCat(StatOf(d, key))});
  }
  counters.AddRow({"largest free block",
                   Amount(StatOf(d, "largest_free_block_bytes"), true)});
  counters.AddRow(
      {"cached free", Amount(StatOf(d, "cached_free_bytes"), true)});
  counters.AddRow(
      {"fragmentation", Percent(StatOf(d, "fragmentation_ppm") / 1e6)});
  counters.AddRow({"capacity", capacity > 0 ? Amount(capacity, true) : "-"});
  absl::StrAppend(&out, Body(counters), "\n");

  const auto by_size = SessionsBySize(d.session_bytes());
  if (!d.pool().empty()) {  // staging buffers belong to the daemon
    absl::StrAppend(&out, "buffers of ", d.pool(),
                    " serve transfers; no session owns them\n");
    return out;
  }
  if (by_size.empty()) {
    absl::StrAppend(&out, "no session holds memory on ", d.device(), "\n");
    return out;
  }
  const int64_t allocated = StatOf(d, "allocated_bytes.all.current");
  Table table({"SESSION", "USER", "CLIENT", ">ALLOCATED", ">SHARE"});
  for (const auto& [id, bytes] : by_size) {
    const v1::SessionInfo* s = FindSession(sessions, id);
    const std::string user = s && !s->user().empty() ? s->user() : "-";
    const std::string client =
        s && !s->client_name().empty() ? s->client_name() : "-";
    table.AddRow({id, user, client, Amount(bytes, true),
                  allocated > 0
                      ? Percent(static_cast<double>(bytes) / allocated)
                      : "-"});
  }
  absl::StrAppend(&out, table.ToString());
  return out;
}

std::string FormatSharedBuffers(const v1::SharedBufferStats& shared,
                                const v1::ListSessionsResponse& sessions) {
  const std::string title = "shared buffers (host memory)";
  std::string out =
      absl::StrCat(title, "\n", std::string(title.size(), '='), "\n");
  Table totals({"", ">"});
  totals.AddRow({"buffers", absl::StrCat(shared.count())});
  totals.AddRow({"bytes", HumanBytes(shared.bytes())});
  absl::StrAppend(&out, Body(totals),
                  "mapped by clients and the daemon (AllocateShared); in the "
                  "users' cpu quota, in no pool above\n");
  const auto by_size = SessionsBySize(shared.session_bytes());
  if (by_size.empty()) {
    absl::StrAppend(&out, "no session holds shared buffers\n");
    return out;
  }
  Table table({"SESSION", "USER", "CLIENT", ">BUFFERS", ">BYTES", ">SHARE"});
  for (const auto& [id, bytes] : by_size) {
    const v1::SessionInfo* s = FindSession(sessions, id);
    table.AddRow({id, s && !s->user().empty() ? s->user() : "-",
                  s && !s->client_name().empty() ? s->client_name() : "-",
                  absl::StrCat(BuffersOf(shared, id)), HumanBytes(bytes),
                  shared.bytes() > 0
                      ? Percent(static_cast<double>(bytes) / shared.bytes())
                      : "-"});
  }
  absl::StrAppend(&out, table.ToString());
  return out;
}

std::string MemoryStatsJson(const v1::MemoryStatsResponse& stats,
                            const v1::ListSessionsResponse& sessions) {
  std::vector<std::string> devices;
  for (const v1::DeviceMemoryStats& d : stats.devices()) {
    JsonObject raw;
    const std::map<std::string, int64_t> sorted(d.stats().begin(),
                                                d.stats().end());
    for (const auto& [key, value] : sorted) raw.Add(key, value);
    std::vector<std::string> items;
    for (const auto& [id, bytes] : SessionsBySize(d.session_bytes())) {
      items.push_back(
          SessionJson(sessions, id).Add("allocated_bytes", bytes).ToString());
    }
    JsonObject entry;
    entry.Add("device", d.device());
    if (!d.pool().empty()) entry.Add("pool", d.pool());
    devices.push_back(entry.AddRaw("stats", raw.ToString())
                          .AddRaw("sessions", JsonArray(items))
                          .ToString());
  }
  JsonObject out;
  out.AddRaw("devices", JsonArray(devices));
  if (stats.has_shared_buffers()) {
    const v1::SharedBufferStats& shared = stats.shared_buffers();
    std::vector<std::string> items;
    for (const auto& [id, bytes] : SessionsBySize(shared.session_bytes())) {
      items.push_back(SessionJson(sessions, id)
                          .Add("buffers", BuffersOf(shared, id))
                          .Add("bytes", bytes)
                          .ToString());
    }
    out.AddRaw("shared_buffers", JsonObject()
                                     .Add("count", shared.count())
                                     .Add("bytes", shared.bytes())
                                     .AddRaw("sessions", JsonArray(items))
                                     .ToString());
  }
  return out.ToString();
}

std::string FormatSegments(const v1::MemorySnapshotResponse& snapshot,
                           int bar_width) {
  uint64_t reserved = 0, allocated = 0;
  for (const v1::MemorySegment& s : snapshot.segments()) {
    reserved += s.total_size();
    allocated += s.allocated_size();
  }
  std::string out = absl::StrFormat(
      "segments on %s: %d, %s reserved, %s allocated   "
      "(%c allocated  %c pending free  %c free)\n",
      snapshot.device(), snapshot.segments_size(), HumanBytes(reserved),
      HumanBytes(allocated), kAllocatedGlyph, kPendingFreeGlyph, kFreeGlyph);
  for (const v1::MemorySegment& s : snapshot.segments()) {
    std::vector<BarSpan> spans;
    for (const v1::MemoryBlock& b : s.blocks()) {
      spans.push_back({b.size(), GlyphOf(b.state())});
    }
    absl::StrAppendFormat(
        &out, "\n0x%x  %-5s  %9s  [%s]  %d block%s, %s allocated\n",
        s.address(), s.segment_type(), HumanBytes(s.total_size()),
        BlockBar(spans, bar_width), s.blocks_size(),
        s.blocks_size() == 1 ? "" : "s", HumanBytes(s.allocated_size()));
    for (const v1::MemoryBlock& b : s.blocks()) {
      std::string line = absl::StrFormat("  0x%x  %9s  %-19s", b.address(),
                                         HumanBytes(b.size()), b.state());
      if (!b.session_id().empty()) {
        absl::StrAppend(&line, "  ", b.session_id(), "  (requested ",
                        HumanBytes(b.requested_size()), ")");
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      absl::StrAppend(&out, line, "\n");
    }
  }
  return out;
}

std::string SegmentsJson(const v1::MemorySnapshotResponse& snapshot) {
  std::vector<std::string> segments;
  for (const v1::MemorySegment& s : snapshot.segments()) {
    std::vector<std::string> blocks;
    for (const v1::MemoryBlock& b : s.blocks()) {
      blocks.push_back(JsonObject()
                           .Add("address", b.address())
                           .Add("size", b.size())
                           .Add("requested_size", b.requested_size())
                           .Add("state", b.state())
                           .Add("session_id", b.session_id())
                           .ToString());
    }
    segments.push_back(JsonObject()
                           .Add("address", s.address())
                           .Add("total_size", s.total_size())
                           .Add("allocated_size", s.allocated_size())
                           .Add("active_size", s.active_size())
                           .Add("requested_size", s.requested_size())
                           .Add("stream", s.stream())
                           .Add("segment_type", s.segment_type())
                           .AddRaw("blocks", JsonArray(blocks))
                           .ToString());
  }
  return JsonObject()
      .Add("device", snapshot.device())
      .AddRaw("segments", JsonArray(segments))
      .ToString();
}

}  // namespace tensorctl
}  // namespace tensord

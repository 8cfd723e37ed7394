#include "tools/tensorctl_commands.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/tensorctl_format.h"

namespace tensord {
namespace tensorctl {
namespace {

constexpr Subcommand kSubcommands[] = {
    {"devices", "", "list the daemon's devices", 0, 0, &RunDevices},
    {"sessions", "", "list sessions: user, state, handles, memory, shared", 0,
     0, &RunSessions},
    {"info", "", "daemon version, uptime and counters", 0, 0, &RunInfo},
    {"users", "",
     "per user: sessions, memory against quota, ops/s, auth failures "
     "[--interval=1s]",
     0, 0, &RunUsers},
    {"kill", "SESSION",
     "end a session and release its handles [--reason TEXT: the client's "
     "error shows it]",
     1, 1, &RunKill},
    {"memory", "", "allocator summary and per-session bytes [--device D]", 0, 0,
     &RunMemory},
    {"segments", "", "map of segments and blocks [--device D]", 0, 0,
     &RunSegments},
    {"snapshot", "",
     "write the allocator snapshot: -o FILE (.pickle: PyTorch's memory_viz "
     "reads it; else JSON) [--device D]",
     0, 0, &RunSnapshot},
    {"memory-history", "[on|off]",
     "record allocations for snapshot's timeline [--max_entries N] "
     "[--device D]; no argument: show the state",
     0, 1, &RunMemoryHistory},
    {"empty-cache", "", "release cached free segments [--device D]", 0, 0,
     &RunEmptyCache},
    {"top", "", "live sessions and memory [--interval=1s] [--iterations=N]", 0,
     0, &RunTop},
    {"profile", "SESSION",
     "per-op phase times [--duration=5s] [-o trace.json] [--top=N]", 1, 1,
     &RunProfile},
};

std::string DeviceMemory(const v1::SessionInfo& s) {
  // Sorted by device name so the output is stable.
  std::map<std::string, uint64_t> sorted(s.memory_bytes().begin(),
                                         s.memory_bytes().end());
  std::vector<std::string> parts;
  for (const auto& [device, bytes] : sorted) {
    parts.push_back(absl::StrCat(device, "=", HumanBytes(bytes)));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, ",");
}

// "shm,ring,cma", "bulk:4": how the session moves bytes besides its stream
// (a bulk socket of several lanes says how many).
std::string PathsCell(const v1::SessionInfo& s) {
  if (s.paths().empty()) return "stream";
  std::vector<std::string> paths(s.paths().begin(), s.paths().end());
  for (std::string& p : paths) {
    if (p == "bulk" && s.bulk_lanes() > 1)
      absl::StrAppend(&p, ":", s.bulk_lanes());
  }
  return absl::StrJoin(paths, ",");
}

// "2 (8.0 MiB)": the session's shared host buffers, apart from MEMORY.
std::string SharedBufferCell(const v1::SessionInfo& s) {
  if (s.shared_buffers() == 0) return "-";
  return absl::StrCat(s.shared_buffers(), " (",
                      HumanBytes(s.shared_buffer_bytes()), ")");
}

// Note [Client fallbacks]: the ops its client ran on its own CPU, by name.
std::map<std::string, uint64_t> SortedFallbacks(const v1::SessionInfo& s) {
  return {s.fallbacks().begin(), s.fallbacks().end()};
}

// "5": every fallback its client reported; "-": none.
std::string FallbacksCell(const v1::SessionInfo& s) {
  uint64_t total = 0;
  for (const auto& [op, count] : s.fallbacks()) total += count;
  return total == 0 ? "-" : absl::StrCat(total);
}

}  // namespace

std::unique_ptr<grpc::ClientContext> Ctl::NewContext() const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(timeout));
  return context;
}

absl::Status Ctl::RpcError(absl::string_view what,
                           const grpc::Status& status) const {
  const auto code = static_cast<absl::StatusCode>(status.error_code());
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return absl::Status(
          code, absl::StrCat("cannot reach tensord at ", address, ": ",
                             status.error_message()));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::Status(
          code, absl::StrCat("tensord at ", address, " did not answer ", what,
                             " within ", absl::FormatDuration(timeout)));
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return absl::Status(
          code, absl::StrCat("tensord at ", address, " refused ", what, ": ",
                             status.error_message(),
                             " (pass the admin token with --token or "
                             "TENSORD_ADMIN_TOKEN)"));
    default:
      return absl::Status(code,
                          absl::StrCat(what, ": ", status.error_message()));
  }
}

absl::Span<const Subcommand> Subcommands() { return kSubcommands; }

const Subcommand* FindSubcommand(absl::string_view name) {
  for (const Subcommand& command : kSubcommands) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

std::string UsageText() {
  std::string text =
      "tensorctl: inspect and manage a tensord daemon.\n\n"
      "usage: tensorctl [--server=HOST:PORT] [--token=TOKEN] [--json] "
      "COMMAND [ARGS]\n\ncommands:\n";
  for (const Subcommand& c : kSubcommands) {
    const std::string call =
        c.usage[0] ? absl::StrCat(c.name, " ", c.usage) : c.name;
    absl::StrAppendFormat(&text, "  %-20s %s\n", call, c.summary);
  }
  absl::StrAppend(&text,
                  "\nThe address defaults to $TENSORD_ADDRESS, else "
                  "127.0.0.1:50051; the token to $TENSORD_ADMIN_TOKEN.\n");
  return text;
}

absl::Status RunDevices(Ctl& ctl, Args) {
  v1::ListDevicesResponse response;
  grpc::Status status = ctl.admin->ListDevices(
      ctl.NewContext().get(), v1::ListDevicesRequest(), &response);
  if (!status.ok()) return ctl.RpcError("ListDevices", status);
  if (ctl.json) {
    std::vector<std::string> items;
    for (const v1::DeviceInfo& d : response.devices()) {
      items.push_back(JsonObject()
                          .Add("name", d.name())
                          .Add("kind", d.kind())
                          .Add("description", d.description())
                          .Add("total_memory", d.total_memory())
                          .Add("compute_capability", d.compute_capability())
                          .ToString());
    }
    *ctl.out << JsonObject().AddRaw("devices", JsonArray(items)).ToString()
             << "\n";
    return absl::OkStatus();
  }
  Table table({"DEVICE", "KIND", ">MEMORY", "CAPABILITY", "DESCRIPTION"});
  for (const v1::DeviceInfo& d : response.devices()) {
    table.AddRow({d.name(), d.kind(),
                  d.total_memory() ? HumanBytes(d.total_memory()) : "-",
                  d.compute_capability().empty() ? "-" : d.compute_capability(),
                  d.description()});
  }
  *ctl.out << table.ToString();
  return absl::OkStatus();
}

absl::Status RunSessions(Ctl& ctl, Args) {
  v1::ListSessionsResponse response;
  grpc::Status status = ctl.admin->ListSessions(
      ctl.NewContext().get(), v1::ListSessionsRequest(), &response);
  if (!status.ok()) return ctl.RpcError("ListSessions", status);
  if (ctl.json) {
    std::vector<std::string> items;
    for (const v1::SessionInfo& s : response.sessions()) {
      std::vector<std::string> paths;
      for (const std::string& p : s.paths()) paths.push_back(JsonString(p));
      JsonObject memory;
      std::map<std::string, uint64_t> sorted(s.memory_bytes().begin(),
                                             s.memory_bytes().end());
      for (const auto& [device, bytes] : sorted) memory.Add(device, bytes);
      JsonObject fallbacks;
      for (const auto& [op, count] : SortedFallbacks(s)) {
        fallbacks.Add(op, count);
      }
      items.push_back(JsonObject()
                          .Add("session_id", s.session_id())
                          .Add("user", s.user())
                          .Add("client_name", s.client_name())
                          .Add("peer", s.peer())
                          .Add("age_seconds", s.age_seconds())
                          .Add("state", s.state())
                          .Add("live_handles", s.live_handles())
                          .Add("ops_run", s.ops_run())
                          .Add("queue_depth", s.queue_depth())
                          .AddRaw("memory_bytes", memory.ToString())
                          .Add("shared_buffers", s.shared_buffers())
                          .Add("shared_buffer_bytes", s.shared_buffer_bytes())
                          .AddRaw("paths", JsonArray(paths))
                          .Add("bulk_lanes", uint64_t{s.bulk_lanes()})
                          .AddRaw("fallbacks", fallbacks.ToString())
                          .ToString());
    }
    *ctl.out << JsonObject().AddRaw("sessions", JsonArray(items)).ToString()
             << "\n";
    return absl::OkStatus();
  }
  if (response.sessions_size() == 0) {
    *ctl.out << "no sessions\n";
    return absl::OkStatus();
  }
  Table table({"SESSION", "USER", "CLIENT", "PEER", ">AGE", "STATE", ">HANDLES",
               ">OPS", ">QUEUE", "MEMORY", "SHARED", "PATHS", ">FALLBACKS"});
  for (const v1::SessionInfo& s : response.sessions()) {
    table.AddRow({s.session_id(), s.user().empty() ? "-" : s.user(),
                  s.client_name().empty() ? "-" : s.client_name(), s.peer(),
                  HumanDuration(s.age_seconds()), s.state(),
                  absl::StrCat(s.live_handles()), absl::StrCat(s.ops_run()),
                  absl::StrCat(s.queue_depth()), DeviceMemory(s),
                  SharedBufferCell(s), PathsCell(s), FallbacksCell(s)});
  }
  *ctl.out << table.ToString();
  return absl::OkStatus();
}

absl::Status RunInfo(Ctl& ctl, Args) {
  v1::ServerInfoResponse r;
  grpc::Status status = ctl.admin->ServerInfo(ctl.NewContext().get(),
                                              v1::ServerInfoRequest(), &r);
  if (!status.ok()) return ctl.RpcError("ServerInfo", status);
  if (ctl.json) {
    *ctl.out << JsonObject()
                    .Add("version", r.version())
                    .Add("protocol_version",
                         static_cast<uint64_t>(r.protocol_version()))
                    .Add("uptime_seconds", r.uptime_seconds())
                    .Add("active_sessions", r.active_sessions())
                    .Add("num_ops", r.num_ops())
                    .Add("listen_address", r.listen_address())
                    .Add("cuda_built", r.cuda_built())
                    .Add("default_device", r.default_device())
                    .ToString()
             << "\n";
    return absl::OkStatus();
  }
  Table table({"", ""});
  table.AddRow({"version", r.version()});
  table.AddRow({"protocol", absl::StrCat(r.protocol_version())});
  table.AddRow({"listen", r.listen_address()});
  table.AddRow({"uptime", HumanDuration(r.uptime_seconds())});
  table.AddRow({"sessions", absl::StrCat(r.active_sessions())});
  table.AddRow({"ops", absl::StrCat(r.num_ops())});
  table.AddRow({"cuda built", r.cuda_built() ? "yes" : "no"});
  table.AddRow({"default device", r.default_device()});
  // Skip the empty header line of a key/value table.
  const std::string text = table.ToString();
  *ctl.out << text.substr(text.find('\n') + 1);
  return absl::OkStatus();
}

absl::Status RunKill(Ctl& ctl, Args args) {
  v1::KillSessionRequest request;
  request.set_session_id(args[0]);
  request.set_reason(ctl.reason);
  v1::KillSessionResponse response;
  grpc::Status status =
      ctl.admin->KillSession(ctl.NewContext().get(), request, &response);
  if (!status.ok()) {
    return ctl.RpcError(absl::StrCat("kill ", args[0]), status);
  }
  if (ctl.json) {
    *ctl.out << JsonObject()
                    .Add("killed", args[0])
                    .Add("reason", ctl.reason)
                    .ToString()
             << "\n";
  } else {
    *ctl.out << "killed session " << args[0] << "\n";
  }
  return absl::OkStatus();
}

}  // namespace tensorctl
}  // namespace tensord

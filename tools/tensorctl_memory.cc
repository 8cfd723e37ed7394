// tensorctl's allocator commands: memory, segments, snapshot, empty-cache,
// memory-history. Each is one Admin RPC (memory adds ListSessions for user
// and client names) rendered by tensorctl_memory_view; memory also shows the
// sessions' shared host buffers (without --device, or with --device=cpu).
// snapshot writes PyTorch's pickle for a FILE ending .pickle or .pkl
// (tools/snapshot_pickle.h), else the daemon's JSON.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tools/snapshot_pickle.h"
#include "tools/tensorctl_commands.h"
#include "tools/tensorctl_format.h"
#include "tools/tensorctl_memory_view.h"

namespace tensord {
namespace tensorctl {
namespace {

constexpr int kBarWidth = 48;

absl::Status FetchSnapshot(Ctl& ctl, v1::MemorySnapshotResponse* response) {
  v1::MemorySnapshotRequest request;
  request.set_device(ctl.device);
  grpc::Status status =
      ctl.admin->MemorySnapshot(ctl.NewContext().get(), request, response);
  return status.ok() ? absl::OkStatus()
                     : ctl.RpcError("MemorySnapshot", status);
}

}  // namespace

absl::Status RunMemory(Ctl& ctl, Args) {
  v1::MemoryStatsRequest request;
  request.set_device(ctl.device);
  v1::MemoryStatsResponse stats;
  grpc::Status status =
      ctl.admin->MemoryStats(ctl.NewContext().get(), request, &stats);
  if (!status.ok()) return ctl.RpcError("MemoryStats", status);
  v1::ListSessionsResponse sessions;
  status = ctl.admin->ListSessions(ctl.NewContext().get(),
                                   v1::ListSessionsRequest(), &sessions);
  if (!status.ok()) return ctl.RpcError("ListSessions", status);
  if (ctl.json) {
    *ctl.out << MemoryStatsJson(stats, sessions) << "\n";
    return absl::OkStatus();
  }
  for (int i = 0; i < stats.devices_size(); ++i) {
    *ctl.out << (i > 0 ? "\n" : "")
             << FormatMemorySummary(stats.devices(i), sessions);
  }
  if (stats.has_shared_buffers()) {
    *ctl.out << "\n" << FormatSharedBuffers(stats.shared_buffers(), sessions);
  }
  return absl::OkStatus();
}

absl::Status RunSegments(Ctl& ctl, Args) {
  v1::MemorySnapshotResponse snapshot;
  if (absl::Status s = FetchSnapshot(ctl, &snapshot); !s.ok()) return s;
  *ctl.out << (ctl.json ? SegmentsJson(snapshot) + "\n"
                        : FormatSegments(snapshot, kBarWidth));
  return absl::OkStatus();
}

absl::Status RunSnapshot(Ctl& ctl, Args) {
  if (ctl.output.empty()) {
    return absl::InvalidArgumentError(
        "usage: tensorctl snapshot -o FILE [--device D] (FILE '-' is stdout)");
  }
  v1::MemorySnapshotResponse snapshot;
  if (absl::Status s = FetchSnapshot(ctl, &snapshot); !s.ok()) return s;
  if (ctl.output == "-") {
    *ctl.out << snapshot.json() << "\n";
    return absl::OkStatus();
  }
  const bool pickle = absl::EndsWith(ctl.output, ".pickle") ||
                      absl::EndsWith(ctl.output, ".pkl");
  std::string bytes = snapshot.json() + "\n";
  if (pickle) {
    absl::StatusOr<std::string> pickled = JsonToPickle(snapshot.json());
    if (!pickled.ok()) return pickled.status();
    bytes = *std::move(pickled);
  }
  {
    std::ofstream file(ctl.output, std::ios::binary | std::ios::trunc);
    file << bytes;
    file.close();
    if (!file) {
      return absl::UnavailableError(
          absl::StrCat("cannot write the snapshot to ", ctl.output, ": ",
                       std::strerror(errno),
                       " (check the directory exists and is writable)"));
    }
  }
  uint64_t reserved = 0;
  for (const v1::MemorySegment& s : snapshot.segments()) {
    reserved += s.total_size();
  }
  if (ctl.json) {
    *ctl.out << JsonObject()
                    .Add("device", snapshot.device())
                    .Add("file", ctl.output)
                    .Add("format", pickle ? "pickle" : "json")
                    .Add("file_bytes", static_cast<uint64_t>(bytes.size()))
                    .Add("json_bytes",
                         static_cast<uint64_t>(snapshot.json().size() + 1))
                    .Add("segments", snapshot.segments_size())
                    .Add("reserved_bytes", reserved)
                    .ToString()
             << "\n";
  } else {
    *ctl.out << "wrote the snapshot of " << snapshot.device() << " ("
             << snapshot.segments_size() << " segments, "
             << HumanBytes(reserved) << " reserved) to " << ctl.output << "\n";
  }
  return absl::OkStatus();
}

absl::Status RunEmptyCache(Ctl& ctl, Args) {
  v1::EmptyCacheRequest request;
  request.set_device(ctl.device);
  v1::EmptyCacheResponse response;
  grpc::Status status =
      ctl.admin->EmptyCache(ctl.NewContext().get(), request, &response);
  if (!status.ok()) return ctl.RpcError("EmptyCache", status);
  const std::string where = ctl.device.empty() ? "every device" : ctl.device;
  if (ctl.json) {
    *ctl.out << JsonObject()
                    .Add("device", ctl.device)
                    .Add("released_bytes", response.released_bytes())
                    .Add("released_staging_bytes",
                         response.released_staging_bytes())
                    .ToString()
             << "\n";
  } else {
    *ctl.out << "released " << HumanBytes(response.released_bytes()) << " ("
             << response.released_bytes() << " bytes) from " << where;
    if (response.released_staging_bytes() > 0) {
      *ctl.out << ", of which " << HumanBytes(response.released_staging_bytes())
               << " pinned staging";
    }
    *ctl.out << "\n";
  }
  return absl::OkStatus();
}

absl::Status RunMemoryHistory(Ctl& ctl, Args args) {
  v1::RecordMemoryHistoryRequest request;
  request.set_device(ctl.device);
  const std::string action = args.empty() ? "" : args[0];
  if (action == "on") {
    request.set_action(v1::RecordMemoryHistoryRequest::ON);
    request.set_max_entries(ctl.max_entries);
  } else if (action == "off") {
    request.set_action(v1::RecordMemoryHistoryRequest::OFF);
  } else if (!action.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "memory-history takes 'on' or 'off' (or nothing, to show the state), "
        "not '",
        action, "'"));
  }
  v1::RecordMemoryHistoryResponse response;
  grpc::Status status = ctl.admin->RecordMemoryHistory(ctl.NewContext().get(),
                                                       request, &response);
  if (!status.ok()) return ctl.RpcError("RecordMemoryHistory", status);
  if (ctl.json) {
    std::vector<std::string> devices;
    for (const v1::MemoryHistoryState& d : response.devices()) {
      devices.push_back(JsonObject()
                            .Add("device", d.device())
                            .Add("max_entries", d.max_entries())
                            .Add("events", d.events())
                            .ToString());
    }
    *ctl.out << JsonObject().AddRaw("devices", JsonArray(devices)).ToString()
             << "\n";
    return absl::OkStatus();
  }
  for (const v1::MemoryHistoryState& d : response.devices()) {
    if (d.max_entries() == 0) {
      *ctl.out << d.device() << ": memory history off\n";
    } else {
      *ctl.out << d.device() << ": memory history on, keeping the newest "
               << d.max_entries() << " events (" << d.events() << " now)\n";
    }
  }
  return absl::OkStatus();
}

}  // namespace tensorctl
}  // namespace tensord

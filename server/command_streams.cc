// CommandRunner's streams and events: SetOptions.stream, RecordEvent and
// WaitEvent (docs/protocol.md "Streams and events"; Note [Session streams]
// and Note [Session events] in runtime/device.h).
//
// The runner validates everything itself (ids, caps, devices, whether an
// event was recorded), so a CPU-only daemon, where streams and events order
// nothing, accepts and rejects exactly what a CUDA one does. Errors have no
// handle to live in: they are reported like malformed commands (Error
// {request_id 0} and the next SyncDone), and the session goes on.
#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "server/command_runner.h"

namespace tensord {

absl::Status CommandRunner::UseStreamId(uint32_t stream_id) {
  if (stream_id == 0 || stream_ids_.contains(stream_id)) {
    return absl::OkStatus();
  }
  if (stream_ids_.size() >= kMaxSessionStreams) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stream ", stream_id, ": a session may use at most ",
        kMaxSessionStreams,
        " streams besides its default one (reuse the Stream objects)"));
  }
  stream_ids_.insert(stream_id);
  return absl::OkStatus();
}

absl::StatusOr<Device*> CommandRunner::EventDevice(
    const std::string& name) const {
  if (name.empty()) return default_device_;
  Device* device = config_.devices->Find(name);
  if (device == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown device '", name,
                     "' (this daemon serves: ", config_.devices->Names(), ")"));
  }
  return device;
}

void CommandRunner::ReleaseEvent(uint64_t id) {
  auto it = events_.find(id);
  if (it == events_.end()) return;
  it->second->ReleaseSessionEvent(config_.session, id);
  events_.erase(it);
}

void CommandRunner::RunSetStream(uint32_t stream_id) {
  absl::Status usable = UseStreamId(stream_id);
  if (!usable.ok()) return ReportFrameError(usable, "set_stream", "");
  stream_id_ = stream_id;
}

void CommandRunner::RunRecordEvent(const v1::RecordEvent& cmd) {
  absl::Status status = [&]() -> absl::Status {
    if (cmd.event() == 0) {
      return absl::InvalidArgumentError("event ids must be non-zero");
    }
    TD_ASSIGN_OR_RETURN(Device * device, EventDevice(cmd.device()));
    TD_RETURN_IF_ERROR(UseStreamId(cmd.stream()));
    auto known = events_.find(cmd.event());
    if (known == events_.end() && events_.size() >= kMaxSessionEvents) {
      return absl::InvalidArgumentError(absl::StrCat(
          "event ", cmd.event(), ": a session may record at most ",
          kMaxSessionEvents, " live events (drop or reuse Event objects)"));
    }
    TD_ASSIGN_OR_RETURN(StreamHandle stream,
                        device->SessionStream(config_.session, cmd.stream()));
    if (known != events_.end() && known->second != device) {
      ReleaseEvent(cmd.event());  // moves to another device
    }
    TD_RETURN_IF_ERROR(
        device->RecordSessionEvent(config_.session, cmd.event(), stream));
    events_[cmd.event()] = device;
    return absl::OkStatus();
  }();
  if (!status.ok()) ReportFrameError(status, "record_event", "");
}

void CommandRunner::RunWaitEvent(const v1::WaitEvent& cmd) {
  absl::Status status = [&]() -> absl::Status {
    auto recorded = events_.find(cmd.event());
    if (recorded == events_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "event ", cmd.event(),
          " was never recorded in this session; record it (event.record()) "
          "before a stream waits on it"));
    }
    TD_ASSIGN_OR_RETURN(Device * device, EventDevice(cmd.device()));
    if (device != recorded->second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "event ", cmd.event(), " was recorded on ", recorded->second->name(),
          "; a stream of ", device->name(),
          " cannot wait on it (waits across devices are not supported)"));
    }
    TD_RETURN_IF_ERROR(UseStreamId(cmd.stream()));
    TD_ASSIGN_OR_RETURN(StreamHandle stream,
                        device->SessionStream(config_.session, cmd.stream()));
    return device->WaitSessionEvent(config_.session, cmd.event(), stream);
  }();
  if (!status.ok()) ReportFrameError(status, "wait_event", "");
}

}  // namespace tensord

// CommandRunner's GetMemoryStats: the session's own memory on one device,
// for a tenant without admin rights (torch.tensord.memory_stats()).
//
// Note [Session stats] (runtime/memory/allocator_stats.h) says which of the
// allocator's counters belong to one session alone. The answer holds those
// of this session and nothing derived from another's: no device totals, no
// reserved or cached bytes (the cache is shared: its growth would show
// another session's work), no per-session map, no quota account (a user's
// other sessions share it). Admin's MemoryStats (tensorctl memory) keeps the
// whole picture for operators. The command runs in the session's order, so
// the figures include every earlier op's outputs and every earlier Release.
#include "absl/strings/str_cat.h"
#include "server/command_runner.h"
#include "server/proto_convert.h"

namespace tensord {

void CommandRunner::RunGetMemoryStats(const v1::GetMemoryStats& get) {
  Device* device = get.device().empty() ? default_device_
                                        : config_.devices->Find(get.device());
  if (device == nullptr) {
    // The name is at most kMaxNameBytes (CheckCommand); the devices are the
    // ones every Welcome lists.
    return ReplyError(
        get.request_id(),
        absl::InvalidArgumentError(absl::StrCat(
            "unknown device '", get.device(),
            "' (this daemon serves: ", config_.devices->Names(), ")")),
        "memory_stats");
  }
  CachingAllocator* allocator = device->allocator();
  v1::ServerFrame frame;
  v1::SessionMemoryStats* reply = frame.mutable_session_memory_stats();
  reply->set_request_id(get.request_id());
  reply->set_device(device->name());
  auto& stats = *reply->mutable_stats();
  for (const auto& [key, value] :
       SessionStatsToMap(allocator->SessionStatsOf(config_.session))) {
    stats[key] = value;
  }
  if (get.reset_peak()) allocator->ResetSessionPeaks(config_.session);
  if (device->kind() == DeviceKind::kCpu) {
    // Its shared host buffers: host memory its quota on the cpu allocator
    // counts, outside the allocator's blocks.
    const SharedBufferUsage shared = shared_.usage();
    stats["shared_buffers"] = static_cast<int64_t>(shared.count);
    stats["shared_buffer_bytes"] = static_cast<int64_t>(shared.bytes);
  }
  sink_->Send(std::move(frame));
}

void CommandRunner::ReplyError(uint64_t request_id, const absl::Status& status,
                               const std::string& what) {
  v1::ServerFrame frame;
  frame.mutable_error()->set_request_id(request_id);
  *frame.mutable_error()->mutable_status() = StatusToProto(status, what, "");
  sink_->Send(std::move(frame));
}

}  // namespace tensord

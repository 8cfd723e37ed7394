// CommandRunner's profiling commands: SetOptions.profile, GetProfile, and the
// timing wrapper around Call/Backward (server/session_profiler.h).
#include "runtime/ops/op_table.h"
#include "server/command_runner.h"
#include "server/proto_convert.h"

namespace tensord {

void CommandRunner::RunProfiled(const v1::Command& cmd, v1::Ack* ack) {
  const int before = ack->created_size();
  v1::OpRecord record;
  record.set_start_ns(profiler_.Now());
  if (cmd.has_call()) {
    const auto& table = OpTable();
    const uint32_t id = cmd.call().op_id();
    record.set_op(id < table.size() ? table[id].name : "op#?");
    record.set_site(cmd.call().site());
    RunCall(cmd.call(), ack);
  } else {
    record.set_op("backward");
    record.set_site(cmd.backward().site());
    RunBackward(cmd.backward(), ack);
  }
  record.set_wall_ns(profiler_.Now() - record.start_ns());
  uint64_t bytes = 0;
  for (int i = before; i < ack->created_size(); ++i) {
    const v1::TensorMeta& m = ack->created(i);
    auto dtype = DTypeFromWire(m.dtype());
    if (!dtype.ok() || m.has_error()) continue;
    uint64_t numel = 1;
    for (int64_t s : m.shape()) numel *= static_cast<uint64_t>(s);
    bytes += numel * ItemSize(*dtype);
    if (record.device().empty()) record.set_device(m.device());
  }
  if (record.device().empty()) record.set_device(default_device_->name());
  record.set_bytes_allocated(bytes);
  profiler_.Record(std::move(record));
}

void CommandRunner::RunGetProfile(const v1::GetProfile& get) {
  v1::ServerFrame frame;
  v1::Profile* profile = frame.mutable_profile();
  profile->set_request_id(get.request_id());
  profiler_.Fill(get.clear(), profile);
  sink_->Send(std::move(frame));
}

}  // namespace tensord

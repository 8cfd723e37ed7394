// CommandRunner's profiling commands: SetOptions.profile, GetProfile, the
// timing wrapper around Call/Backward (server/session_profiler.h), and the
// client's fallbacks (NoteFallbacks; Note [Client fallbacks]).
#include "proto/packed_commands.h"
#include "runtime/ops/op_table.h"
#include "server/command_runner.h"
#include "server/proto_convert.h"

namespace tensord {

void CommandRunner::RunProfiled(const CallView* call,
                                const v1::Backward* backward, v1::Ack* ack) {
  const int before = ack->created_size();
  const size_t packed_before = ack->packed_created().size();
  v1::OpRecord record;
  OpPhases phases;
  phases_ = &phases;  // MakeContext hands it to RunOp (Note [Op phases])
  const uint64_t generation = profiler_.generation();
  const uint64_t start = PhaseClockNs();
  const uint64_t epoch = profiler_.epoch_ns();
  record.set_start_ns(start > epoch ? start - epoch : 0);
  if (batch_arrived_ns_ != 0 && start > batch_arrived_ns_) {
    record.set_wait_ns(start - batch_arrived_ns_);
  }
  if (call != nullptr) {
    const auto& table = OpTable();
    record.set_op(call->op_id < table.size() ? table[call->op_id].name
                                             : "op#?");
    RunCall(*call, ack);
    absl::StatusOr<SiteText> site = CallSite(*call);
    record.set_site(site.ok() ? **site : *call->site);
  } else {
    record.set_op("backward");
    record.set_site(backward->site());
    RunBackward(*backward, ack);
  }
  const uint64_t end = PhaseClockNs();
  phases_ = nullptr;
  record.set_wall_ns(end - start);
  // Before the first RunOp: handle lookups, attributes, checks. An op that
  // failed before running, or a view, decodes all the way.
  const uint64_t decoded = phases.first_run_ns != 0 ? phases.first_run_ns : end;
  record.set_decode_ns(decoded - start);
  record.set_infer_ns(phases.infer_ns);
  record.set_alloc_ns(phases.alloc_ns);
  record.set_kernel_ns(phases.kernel_ns);
  for (const PhaseSpan& span : phases.spans) {
    v1::OpSpan* node = record.add_nodes();
    node->set_name(span.name);
    node->set_start_ns(span.start_ns > epoch ? span.start_ns - epoch : 0);
    node->set_wall_ns(span.wall_ns);
  }
  uint64_t bytes = 0;
  auto count = [&](int wire_dtype, absl::Span<const int64_t> shape,
                   const std::string& device) {
    auto dtype = DTypeFromWire(wire_dtype);
    if (!dtype.ok()) return;
    uint64_t numel = 1;
    for (int64_t s : shape) numel *= static_cast<uint64_t>(s);
    bytes += numel * ItemSize(*dtype);
    if (record.device().empty()) record.set_device(device);
  };
  for (int i = before; i < ack->created_size(); ++i) {
    const v1::TensorMeta& m = ack->created(i);
    if (m.has_error()) continue;
    count(m.dtype(), m.shape(), m.device());
  }
  // Note [Packed metas]: the op's plain outputs.
  packed::Reader metas(
      absl::string_view(ack->packed_created()).substr(packed_before));
  packed::Meta m;
  while (!metas.done() && metas.NextMeta(&m).ok()) {
    const auto& devices = config_.devices->devices();
    count(static_cast<int>(m.dtype), m.shape,
          m.device < devices.size() ? devices[m.device]->name() : "");
  }
  if (record.device().empty()) record.set_device(default_device_->name());
  record.set_bytes_allocated(bytes);
  profiler_.Record(std::move(record), generation);
}

void CommandRunner::RunGetProfile(const v1::GetProfile& get) {
  v1::ServerFrame frame;
  v1::Profile* profile = frame.mutable_profile();
  profile->set_request_id(get.request_id());
  profiler_.Fill(get.clear(), profile);
  sink_->Send(std::move(frame));
}

void CommandRunner::RunNoteFallbacks(const v1::NoteFallbacks& note) {
  // CheckCommand bounded the entries and their names (Note [Wire limits]).
  for (const v1::FallbackCount& f : note.fallbacks()) {
    fallbacks_.Add(f.op(), f.count());
    profiler_.RecordFallback(f.op(), f.count());
    if (config_.user_counters != nullptr) {
      config_.user_counters->fallbacks.fetch_add(f.count(),
                                                 std::memory_order_relaxed);
    }
  }
}

}  // namespace tensord

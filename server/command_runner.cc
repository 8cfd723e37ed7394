#include "server/command_runner.h"

#include <cstring>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"
#include "proto/packed_commands.h"
#include "runtime/autograd/autocast.h"
#include "runtime/autograd/node.h"
#include "runtime/core/block_cache.h"
#include "runtime/core/device_error.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"
#include "server/proto_convert.h"
#include "server/wire_limits.h"

namespace tensord {
namespace {

// Shared buffers are host memory: charged to the cpu allocator's quota.
CachingAllocator* HostAllocator(DeviceRegistry* devices) {
  Device* cpu = devices->Find("cpu");
  return cpu == nullptr ? nullptr : cpu->allocator();
}

}  // namespace

CommandRunner::CommandRunner(RunnerConfig config, FrameSink* sink)
    : config_(config),
      sink_(sink),
      metadata_(std::make_shared<MetadataCharge>(HostAllocator(config.devices),
                                                 config.session)),
      handles_(metadata_.get()),
      errors_(metadata_),
      default_device_(config.devices->default_device()),
      shared_(config.session, HostAllocator(config.devices),
              config.shared_buffer_bytes) {
  recorder_.set_counter(metadata_);  // the graph nodes are metadata too
  if (config_.graph_replay)
    replay_ = StepReplay::Dry(ReplayConfig(), &handles_);
}

CommandRunner::~CommandRunner() = default;

void CommandRunner::RunBatch(const v1::Batch& batch, uint64_t arrived_ns,
                             uint64_t applied_seq) {
  batch_arrived_ns_ = arrived_ns;
  applied_seq_ = applied_seq;
  const uint64_t ops_before = ops_run_.load(std::memory_order_relaxed);
  // The Ack (a TensorMeta per created handle) is built on an arena that
  // lives as long as the outbox keeps the frame (Note [Frame arenas]).
  auto arena = std::make_shared<google::protobuf::Arena>(
      FrameArenaOptions());  // Note [Frame block cache]
  std::shared_ptr<v1::ServerFrame> frame(
      arena,
      google::protobuf::Arena::CreateMessage<v1::ServerFrame>(arena.get()));
  v1::Ack* ack = frame->mutable_ack();
  ack_error_bytes_ = 0;
  for (const v1::Command& cmd : batch.commands()) {
    if (pending_put_ &&
        !(cmd.has_put() && cmd.put().handle() == pending_put_->handle)) {
      AbortPendingPut(ack);
    }
    if (packed::LastSeq(cmd) <= applied_seq) continue;
    Run(cmd, ack);
    ack->set_last_seq(packed::LastSeq(cmd));
    if (downloads_.has_finished()) downloads_.RunFinished();
    // Per command, so Admin agrees with a SyncDone sent mid-batch.
    live_handles_.store(handles_.size(), std::memory_order_relaxed);
  }
  sink_->SendOwned(std::move(frame));
  if (config_.counters != nullptr) {  // Note [Daemon counters]
    const uint64_t now = arrived_ns != 0 ? PhaseClockNs() : 0;
    config_.counters->BatchDone(
        config_.user_counters,
        ops_run_.load(std::memory_order_relaxed) - ops_before,
        batch.commands_size(), (now - arrived_ns) / 1000);
  }
}

void CommandRunner::ReleaseAll() {
  downloads_.WaitAll();
  downloads_.SetWake(nullptr);
  pending_put_.reset();
  handles_.Clear();
  shared_.Clear();
  live_handles_.store(0);
  for (const auto& device : config_.devices->devices()) {
    device->ReleaseSessionStreams(config_.session);
  }
  events_.clear();
  if (replay_ != nullptr) replay_->Clear();
  stream_ids_.clear();
  stream_id_ = 0;
}

void CommandRunner::Run(const v1::Command& cmd, v1::Ack* ack) {
  // Note [Wire limits]: every command of every transport passes here.
  if (absl::Status limits = CheckCommand(cmd); !limits.ok()) {
    return RejectCommand(cmd, limits, ack);
  }
  if (replay_ != nullptr) replay_->Observe(cmd, generator_.Reserve(0));
  if (profiler_.enabled() && cmd.has_call()) {
    const CallView call = CallView::Of(cmd.call());
    return RunProfiled(&call, nullptr, ack);
  }
  if (profiler_.enabled() && cmd.has_backward()) {
    return RunProfiled(nullptr, &cmd.backward(), ack);
  }
  switch (cmd.kind_case()) {
    case v1::Command::kCall:
      return RunCall(CallView::Of(cmd.call()), ack);
    case v1::Command::kPacked:
      return RunPacked(cmd, ack);
    case v1::Command::kPut:
      return RunPut(cmd.put(), ack);
    case v1::Command::kGet:
      return RunGet(cmd.get());
    case v1::Command::kRelease:
      for (uint64_t id : cmd.release().handles()) handles_.Release(id);
      for (uint64_t id : cmd.release().events()) ReleaseEvent(id);
      for (uint64_t id : cmd.release().shared_buffers()) shared_.Free(id);
      return;
    case v1::Command::kSync:
      return RunSync(cmd.sync());
    case v1::Command::kOptions:
      return RunOptions(cmd.options());
    case v1::Command::kBackward:
      return RunBackward(cmd.backward(), ack);
    case v1::Command::kSetRequiresGrad:
      return RunSetRequiresGrad(cmd.set_requires_grad());
    case v1::Command::kGetGrad:
      return RunGetGrad(cmd.get_grad(), ack);
    case v1::Command::kSetGrad:
      return RunSetGrad(cmd.set_grad());
    case v1::Command::kGetProfile:
      return RunGetProfile(cmd.get_profile());
    case v1::Command::kRecordEvent:
      return RunRecordEvent(cmd.record_event());
    case v1::Command::kWaitEvent:
      return RunWaitEvent(cmd.wait_event());
    case v1::Command::kAllocateShared:
      return RunAllocateShared(cmd.allocate_shared());
    case v1::Command::kGetMemoryStats:
      return RunGetMemoryStats(cmd.get_memory_stats());
    case v1::Command::kNoteFallbacks:
      return RunNoteFallbacks(cmd.note_fallbacks());
    case v1::Command::KIND_NOT_SET:
      return ReportFrameError(
          absl::InvalidArgumentError(absl::StrCat(
              "command with seq ", cmd.seq(), " has no kind (empty Command)")),
          "frame", "");
  }
}

void CommandRunner::RejectCommand(const v1::Command& cmd,
                                  const absl::Status& status, v1::Ack* ack) {
  if (cmd.has_get_memory_stats()) {  // its client waits for its answer
    return ReplyError(cmd.get_memory_stats().request_id(), status,
                      "memory_stats");
  }
  if (!cmd.has_call() || cmd.call().outputs_size() > kMaxCallHandles) {
    return ReportFrameError(status, "frame", "");
  }
  // Later commands naming the outputs get this error, not "no such handle".
  const v1::Call& call = cmd.call();
  const auto outputs =
      absl::MakeConstSpan(call.outputs().data(), call.outputs_size());
  if (!CheckNewOutputs(outputs, "call", "")) return;
  auto error = errors_.Keep(status, "call", "");
  NoteError(*error);
  for (uint64_t id : outputs) {
    HandleEntry entry;
    entry.error = error;
    Create(id, std::move(entry), ack);
  }
}

void CommandRunner::Create(uint64_t id, HandleEntry entry, v1::Ack* ack) {
  const bool healthy = !entry.poisoned() && !entry.is_none();
  // Copies of this handle's tensor share autograd identity.
  if (healthy) entry.tensor.EnsureAutograd();
  const Tensor& t = entry.tensor;
  if (config_.packed_acks && healthy && t.grad_fn() == nullptr) {
    packed::Meta m;  // Note [Packed metas]
    m.handle = id;
    m.dtype = static_cast<uint32_t>(t.dtype());
    m.device = DeviceIndex(t.device());
    m.flags = (t.requires_grad() ? packed::kRequiresGrad : 0) |
              (t.is_leaf() ? packed::kIsLeaf : 0);
    m.shape = t.shape();
    packed::AppendMeta(m, ack->mutable_packed_created());
  } else {
    v1::TensorMeta* meta = ack->add_created();
    meta->set_handle(id);
    if (entry.poisoned()) {
      // Note [Wire limits]: a batch of failing calls with many outputs
      // copies the error into each meta; past kMaxAckErrorBytes, the Ack
      // carries a short form (the handle table keeps the whole error).
      const size_t bytes = entry.error->ByteSizeLong();
      if (ack_error_bytes_ + bytes <= kMaxAckErrorBytes) {
        ack_error_bytes_ += bytes;
        *meta->mutable_error() = *entry.error;
      } else {
        *meta->mutable_error() = ShortStatus(*entry.error);
      }
    } else if (entry.is_none()) {
      meta->set_is_none(true);
    } else {
      meta->set_dtype(static_cast<v1::DType>(t.dtype()));
      for (int64_t s : t.shape()) meta->add_shape(s);
      meta->set_device(t.device()->name());
      meta->set_requires_grad(t.requires_grad());
      meta->set_is_leaf(t.is_leaf());
      if (t.grad_fn() != nullptr) meta->set_grad_fn(t.grad_fn()->name());
    }
  }
  handles_.Insert(id, std::move(entry));
}

uint32_t CommandRunner::DeviceIndex(const Device* device) const {
  const auto& all = config_.devices->devices();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].get() == device) return static_cast<uint32_t>(i);
  }
  return 0;  // every tensor lives on a registered device
}

void CommandRunner::NoteError(const v1::Status& status) {
  if (config_.counters != nullptr) {
    config_.counters->CountError(static_cast<absl::StatusCode>(status.code()));
  }
  if (!first_error_) first_error_ = status;
  if (replay_ != nullptr) replay_->NoteError();
}

void CommandRunner::ReportFrameError(const absl::Status& status,
                                     const std::string& what,
                                     const std::string& site) {
  v1::Status error = StatusToProto(status, what, site);
  NoteError(error);
  v1::ServerFrame frame;
  frame.mutable_error()->set_request_id(0);
  *frame.mutable_error()->mutable_status() = std::move(error);
  sink_->Send(std::move(frame));
}

OpContext CommandRunner::MakeContext() {
  OpContext ctx;
  ctx.device = default_device_;
  ctx.devices = config_.devices;
  ctx.generator = &generator_;
  ctx.alloc.session = config_.session;
  ctx.stream_id = stream_id_;
  ctx.allow_tf32 = allow_tf32_;
  ctx.phases = phases_;
  return ctx;
}

bool CommandRunner::CheckNewOutputs(absl::Span<const uint64_t> ids,
                                    const std::string& what,
                                    const std::string& site) {
  // Note [Metadata charge]: the quota must hold the new handles' metadata.
  if (absl::Status room = handles_.Reserve(ids.size()); !room.ok()) {
    ReportFrameError(room, what, site);
    return false;
  }
  uint64_t previous = handles_.max_id();
  for (uint64_t id : ids) {
    absl::Status s = handles_.CheckNew(id);
    if (s.ok() && id <= previous) {
      s = absl::InvalidArgumentError(
          absl::StrCat("output handles must strictly increase, got ", id,
                       " after ", previous));
    }
    if (!s.ok()) {
      ReportFrameError(s, what, site);
      return false;
    }
    previous = id;
  }
  return true;
}

absl::StatusOr<Tensor> CommandRunner::FindTensor(
    uint64_t id, std::shared_ptr<const v1::Status>* poisoned) {
  auto entry = handles_.Find(id);
  if (!entry.ok()) return entry.status();
  if ((*entry)->poisoned()) {
    *poisoned = (*entry)->error;
    return absl::InvalidArgumentError((*entry)->error->message());
  }
  if ((*entry)->is_none()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "handle ", id, " is None (a .grad that was never computed?)"));
  }
  return (*entry)->tensor;
}

void CommandRunner::RunSync(const v1::Sync& sync) {
  // This session's streams only: another session's queued work is not this
  // one's to wait for. host_only: not even those (backward()'s wait).
  if (!sync.host_only()) {
    for (const auto& device : config_.devices->devices()) {
      absl::Status s = device->SynchronizeSession(config_.session);
      if (!s.ok()) NoteError(StatusToProto(s, "sync", ""));
    }
  }
  downloads_.WaitAll();  // every earlier Get's data precedes SyncDone
  v1::ServerFrame frame;
  frame.mutable_sync_done()->set_request_id(sync.request_id());
  if (first_error_) *frame.mutable_sync_done()->mutable_error() = *first_error_;
  first_error_.reset();
  sink_->Send(std::move(frame));
}

void CommandRunner::RunOptions(const v1::SetOptions& options) {
  switch (options.option_case()) {
    case v1::SetOptions::kGradEnabled:
      grad_enabled_ = options.grad_enabled();
      return;
    case v1::SetOptions::kSeed:
      generator_.ManualSeed(options.seed());
      return;
    case v1::SetOptions::kProfile:
      profiler_.SetEnabled(options.profile());
      return;
    case v1::SetOptions::kAllowTf32:
      allow_tf32_ = options.allow_tf32();
      return;
    case v1::SetOptions::kAutocast: {
      if (options.autocast() == v1::DTYPE_UNSPECIFIED) {
        autocast_.reset();
        return;
      }
      auto low = DTypeFromWire(options.autocast());
      if (!low.ok() || (*low != DType::kBFloat16 && *low != DType::kFloat16)) {
        return ReportFrameError(
            absl::InvalidArgumentError(absl::StrCat(
                "autocast takes bfloat16 or float16 (DTYPE_UNSPECIFIED: off), "
                "got dtype value ",
                options.autocast())),
            "set_autocast", "");
      }
      autocast_ = *low;
      return;
    }
    case v1::SetOptions::kStream:
      return RunSetStream(options.stream());
    case v1::SetOptions::kDefaultDevice: {
      Device* device = config_.devices->Find(options.default_device());
      if (device == nullptr) {
        return ReportFrameError(
            absl::InvalidArgumentError(absl::StrCat(
                "unknown device '", options.default_device(),
                "' (this daemon serves: ", config_.devices->Names(), ")")),
            "set_default_device", "");
      }
      default_device_ = device;
      return;
    }
    case v1::SetOptions::OPTION_NOT_SET:
      return ReportFrameError(
          absl::InvalidArgumentError("SetOptions with no option set"),
          "set_options", "");
  }
}

}  // namespace tensord

// Note [Inline batches]: which batches the transport may run itself.
//
// A batch that reaches an idle session usually ends in a sync point (an
// item(), a small Get, a Sync) that the client is waiting for. Handing it to
// the executor costs a thread wake-up on the daemon's side of every such
// round trip (one of ~9 context switches per item() on a 2-core VM,
// BENCHMARKS.md), so Session::Submit runs it on the transport's thread
// instead when the executor is idle and nothing is queued
// (server/session.cc). Those threads are gRPC's and serve every session, so
// only batches whose work is bounded by small sizes run there; anything else
// goes to the executor as before. The check reads the handle table, so it
// runs only while the caller holds the executor's role.
//
// Only a batch with a sync point (a Get, a Sync or a GetMemoryStats) runs
// inline: a client waits for it. Others keep the pipeline in which the
// transport parses the next frame while the executor runs this one (a tiny-op
// stream arrives as a run of short batches when the client flushes on an idle
// stream, and lost 15-25% of its throughput when they ran inline).
//
// The bound is checked, not guessed: the batch is dry-run through shape
// inference (Note [Infer before compute]: pure, no memory touched) on
// tensors that carry only dtype, shape and device for the handles the batch
// itself makes. A batch is cheap when it has at most kInlineMaxCommands
// commands (a packed run counts its entries), the session's default device is
// the CPU, and
//  - every Call is of a row with `infer` or `view` (composites run other
//    rows and are not dry-run), every input and every output a CPU tensor of
//    at most kInlineMaxElements elements, so an op's work is at most about
//    kInlineMaxElements squared multiply-adds (a millisecond);
//  - every Get names such a tensor, every Put makes one and carries 8 KiB
//    at most, through the stream, a shared-memory region or cross-memory
//    attach alike (a client that does not know a result's size yet asks for
//    it through the region);
//  - SetOptions does not change the default device; a Sync only on a
//    daemon with only the CPU, where it waits for nothing;
//  - GetMemoryStats (one allocator lookup) and NoteFallbacks (counters
//    bounded by the wire limits) always are.
// A call that will fail (an unknown handle, bad attributes, a shape error)
// is cheap: it only poisons its outputs. Replies of a cheap batch total a
// few hundred KiB, so they never wait for the transport's flow control,
// which needs gRPC's threads to make progress. Ordering is unchanged: the
// executor's role is held for the whole batch, and a batch that arrives
// meanwhile is queued behind it.
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"
#include "server/command_runner.h"
#include "server/proto_convert.h"

namespace tensord {
namespace {

constexpr int64_t kInlineMaxElements = 1024;

// At most kInlineMaxElements elements (no overflow on hostile sizes).
bool SmallShape(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kInlineMaxElements) return false;
    n *= d;
    if (n > kInlineMaxElements) return false;
  }
  return true;
}

// How many bytes a Put's payload carries, wherever they are.
uint64_t PayloadBytes(const v1::Payload& payload) {
  switch (payload.where_case()) {
    case v1::Payload::kData:
      return payload.data().size();
    case v1::Payload::kRegion:
      return payload.region().size();
    case v1::Payload::kCma:
      return payload.cma().size();
    case v1::Payload::kBulk:
      return payload.bulk().size();
    case v1::Payload::WHERE_NOT_SET:
      break;
  }
  return 0;
}

bool SmallCpu(const Tensor& t) {
  return t.device()->kind() == DeviceKind::kCpu && SmallShape(t.shape());
}

}  // namespace

bool CommandRunner::HasSyncPoint(const v1::Batch& batch) {
  return std::any_of(batch.commands().begin(), batch.commands().end(),
                     [](const v1::Command& c) {
                       return c.has_get() || c.has_sync() ||
                              c.has_get_memory_stats();
                     });
}

bool CommandRunner::CheapToRunInline(const v1::Batch& batch) {
  if (batch.commands_size() > kInlineMaxCommands) return false;
  int commands = 0;  // a packed run counts as the commands it stands for
  for (const v1::Command& cmd : batch.commands()) {
    commands += static_cast<int>(packed::CommandCount(cmd));
  }
  if (commands > kInlineMaxCommands) return false;
  if (!HasSyncPoint(batch)) return false;
  if (default_device_->kind() != DeviceKind::kCpu) return false;
  // Handles the batch makes: a tensor with no bytes of its own but the
  // dtype, shape and device the real one will have (undefined: it will be
  // poisoned). Built only for inference, never read.
  absl::flat_hash_map<uint64_t, Tensor> fresh;
  absl::StatusOr<std::shared_ptr<Storage>> no_bytes;
  auto spec_tensor = [&](DType dtype, const Shape& shape, Device* device) {
    if (!no_bytes.ok() || *no_bytes == nullptr ||
        (*no_bytes)->device() != device) {
      no_bytes = Storage::Allocate(device, 0, {});
    }
    if (!no_bytes.ok()) return Tensor();
    return Tensor(*no_bytes, dtype, shape, ContiguousStrides(shape), 0);
  };
  // An input or Get target: 1 small (or will fail: cheap), 0 too big.
  auto find = [&](uint64_t id, Tensor* t) {
    auto it = fresh.find(id);
    if (it != fresh.end()) {
      *t = it->second;
      return true;
    }
    auto entry = handles_.Find(id);
    if (!entry.ok() || (*entry)->poisoned() || (*entry)->is_none()) {
      *t = Tensor();
      return true;
    }
    *t = (*entry)->tensor;
    return SmallCpu(*t);
  };
  // The outputs of `call`, dry-run; false when one is too big. A call that
  // will fail is cheap: its outputs will be poisoned (undefined here).
  auto dry_run = [&](const CallView& call) {
    auto poisoned = [&] {
      for (uint64_t id : call.outputs) fresh[id] = Tensor();
      return true;
    };
    const auto& table = OpTable();
    if (call.op_id >= table.size()) return poisoned();
    const OpDef& op = table[call.op_id];
    if (op.infer == nullptr && op.view == nullptr) return false;
    std::vector<Tensor> inputs;
    for (uint64_t id : call.inputs) {
      Tensor t;
      if (!find(id, &t)) return false;
      if (!t.defined()) return poisoned();
      inputs.push_back(std::move(t));
    }
    if (!CheckArity(op, inputs.size()).ok()) return poisoned();
    Attrs storage;
    auto attrs = CallAttrsFromProto(op, *call.attrs, &storage);
    if (!attrs.ok()) return poisoned();
    std::vector<Tensor> outputs;
    if (op.infer != nullptr) {
      // Inference fails the same way on the real tensors: the call poisons.
      auto specs = op.infer(inputs, **attrs, MakeContext());
      if (!specs.ok()) return poisoned();
      for (const TensorSpec& s : *specs) {
        if (s.device == nullptr || s.device->kind() != DeviceKind::kCpu ||
            !SmallShape(s.shape)) {
          return false;
        }
        outputs.push_back(spec_tensor(s.dtype, s.shape, s.device));
      }
    } else {
      // A view of a tensor with no bytes may be refused where the real one
      // is not: only a view that could be built counts.
      auto views = op.view(inputs, **attrs, MakeContext());
      if (!views.ok()) return false;
      outputs = *std::move(views);
      for (const Tensor& t : outputs) {
        if (!SmallCpu(t)) return false;
      }
    }
    for (size_t i = 0; i < call.outputs.size(); ++i) {
      fresh[call.outputs[i]] = i < outputs.size() ? outputs[i] : Tensor();
    }
    return true;
  };
  // A packed run's entries, dry-run in order; a malformed run is cheap (it
  // fails at once).
  auto dry_run_packed = [&](const v1::Packed& run) {
    packed::Reader reader(run.entries());
    packed::Entry entry;
    while (!reader.done()) {
      if (!reader.Next(&entry).ok()) return true;
      if (entry.kind == packed::Kind::kCall && !dry_run(CallView::Of(entry))) {
        return false;
      }
    }
    return true;
  };
  for (const v1::Command& cmd : batch.commands()) {
    switch (cmd.kind_case()) {
      case v1::Command::kCall:
        if (!dry_run(CallView::Of(cmd.call()))) return false;
        break;
      case v1::Command::kPacked:
        if (!dry_run_packed(cmd.packed())) return false;
        break;
      case v1::Command::kGet: {
        if (cmd.get().into().has_bulk()) return false;
        Tensor t;
        if (!find(cmd.get().handle(), &t)) return false;
        break;
      }
      case v1::Command::kPut: {
        const v1::Put& put = cmd.put();
        // Bulk bytes are read on the executor, never on a transport thread.
        if (put.payload().has_bulk()) return false;
        if (!SmallShape(put.shape())) return false;
        // A later chunk names no shape: its bytes bound it.
        constexpr uint64_t kMaxBytes = kInlineMaxElements * 8;
        if (PayloadBytes(put.payload()) > kMaxBytes) return false;
        const Shape shape(put.shape().begin(), put.shape().end());
        Device* device = put.device().empty()
                             ? default_device_
                             : config_.devices->Find(put.device());
        if (device != nullptr && device->kind() != DeviceKind::kCpu) {
          return false;
        }
        if (!fresh.contains(put.handle())) {  // its first chunk
          // As RunPut reads it; a refused Put poisons its handle.
          const absl::StatusOr<DType> dtype = DTypeFromWire(put.dtype());
          fresh[put.handle()] = device == nullptr || !dtype.ok()
                                    ? Tensor()
                                    : spec_tensor(*dtype, shape, device);
        }
        break;
      }
      case v1::Command::kSync:
        if (config_.devices->devices().size() != 1) return false;
        break;
      case v1::Command::kOptions:
        if (cmd.options().has_default_device()) return false;
        break;
      case v1::Command::kRelease:
      case v1::Command::kGetMemoryStats:
      case v1::Command::kNoteFallbacks:
        break;
      default:
        return false;
    }
  }
  return true;
}

}  // namespace tensord

// Note [Inline batches]: which batches the transport may run itself.
//
// A batch that reaches an idle session usually ends in a sync point (an
// item(), a small Get, a Sync) that the client is waiting for. Handing it to
// the executor costs a thread wake-up on the daemon's side of every such
// round trip (~20 us of the item() latency on a 2-core VM, BENCHMARKS.md), so
// Session::Submit runs it on the transport's thread instead when the
// executor is idle and nothing is queued (server/session.cc). Those threads
// are gRPC's and serve every session, so only batches whose cost is bounded
// by small sizes run there; the check below is conservative and anything
// else goes to the executor as before. It reads the handle table, so it runs
// only while the caller holds the executor's role.
//
// Only a batch with a sync point (a Get or a Sync) runs inline: a client
// waits for it. Others keep the pipeline in which the transport parses the
// next frame while the executor runs this one (a tiny-op stream arrives as a
// run of short batches when the client flushes on an idle stream, and lost
// 15-25% of its throughput when they ran inline).
//
// A batch is cheap when it has at most kInlineMaxCommands commands, every one
// of them a Call, Get, Put of a small tensor, Release, SetOptions, or (on a
// daemon with only the CPU, where it waits for nothing) a Sync, and:
//  - the session's default device is the CPU;
//  - every input of a Call is a CPU tensor of at most kInlineMaxElements
//    elements, a poisoned or None handle, or an output of an earlier Call of
//    the batch (itself cheap, so bounded);
//  - every integer attribute, every list's product of integers and (for a
//    Call without inputs: a factory such as arange) every float attribute is
//    at most kInlineMaxElements in magnitude, so an output's size is bounded
//    by a small power of it (an outer product of two such vectors: 1 Mi
//    elements, about a millisecond);
//  - a Get names such a tensor or an output of the batch.
// Ordering is unchanged: the executor's role is held for the whole batch,
// and a batch that arrives meanwhile is queued behind it.
#include <algorithm>
#include <cmath>

#include "absl/container/inlined_vector.h"
#include "server/command_runner.h"

namespace tensord {
namespace {

constexpr int64_t kInlineMaxElements = 1024;
constexpr int64_t kInlineMaxPutBytes = 64 << 10;

// |v| <= limit, without negating INT64_MIN.
bool Within(int64_t v, int64_t limit) { return v >= -limit && v <= limit; }

bool SmallAttr(const v1::AttrValue& value, bool factory) {
  switch (value.value_case()) {
    case v1::AttrValue::kI:
      return Within(value.i(), kInlineMaxElements);
    case v1::AttrValue::kF:
      return !factory || std::fabs(value.f()) <= kInlineMaxElements;
    case v1::AttrValue::kInts: {
      int64_t product = 1;
      for (int64_t v : value.ints().values()) {
        if (!Within(v, kInlineMaxElements)) return false;
        product *= std::max<int64_t>(1, v < 0 ? -v : v);
        if (product > kInlineMaxElements * kInlineMaxElements) return false;
      }
      return true;
    }
    case v1::AttrValue::kFloats:
      if (!factory) return true;
      for (double v : value.floats().values()) {
        if (std::fabs(v) > kInlineMaxElements) return false;
      }
      return true;
    default:
      return true;
  }
}

}  // namespace

bool CommandRunner::CheapToRunInline(const v1::Batch& batch) const {
  if (batch.commands_size() > kInlineMaxCommands) return false;
  if (default_device_->kind() != DeviceKind::kCpu) return false;
  absl::InlinedVector<uint64_t, kInlineMaxCommands> fresh;  // Call outputs
  auto small_handle = [&](uint64_t id) {
    if (std::find(fresh.begin(), fresh.end(), id) != fresh.end()) return true;
    auto entry = handles_.Find(id);
    if (!entry.ok() || (*entry)->poisoned() || (*entry)->is_none()) {
      return true;  // an error to report, no work
    }
    const Tensor& t = (*entry)->tensor;
    return t.device()->kind() == DeviceKind::kCpu &&
           t.numel() <= kInlineMaxElements;
  };
  bool sync_point = false;
  for (const v1::Command& cmd : batch.commands()) {
    sync_point |= cmd.has_get() || cmd.has_sync();
    switch (cmd.kind_case()) {
      case v1::Command::kCall: {
        const v1::Call& call = cmd.call();
        for (uint64_t id : call.inputs()) {
          if (!small_handle(id)) return false;
        }
        const bool factory = call.inputs_size() == 0;
        for (const auto& [name, value] : call.attrs()) {
          if (!SmallAttr(value, factory)) return false;
        }
        for (uint64_t id : call.outputs()) {
          if (fresh.size() == fresh.capacity()) return false;
          fresh.push_back(id);
        }
        break;
      }
      case v1::Command::kGet:
        if (cmd.get().shm() || !small_handle(cmd.get().handle())) {
          return false;
        }
        break;
      case v1::Command::kPut: {
        // The first chunk allocates the whole tensor: bound its shape.
        const v1::Put& put = cmd.put();
        int64_t numel = 1;
        for (int64_t s : put.shape()) {
          if (s < 0 || s > kInlineMaxPutBytes) return false;
          numel *= s;
          if (numel > kInlineMaxPutBytes) return false;
        }
        if (put.shm() ||
            static_cast<int64_t>(put.data().size()) > kInlineMaxPutBytes) {
          return false;
        }
        break;
      }
      case v1::Command::kSync:
        if (config_.devices->devices().size() != 1) return false;
        break;
      case v1::Command::kRelease:
      case v1::Command::kOptions:
        break;
      default:
        return false;
    }
  }
  return sync_point;
}

}  // namespace tensord

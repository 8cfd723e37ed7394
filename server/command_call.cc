// CommandRunner's compute command: a Call runs one op of the table on the
// session's handles (or poisons its outputs with why it could not).
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "runtime/autograd/autocast.h"
#include "runtime/core/device_error.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"
#include "server/command_runner.h"
#include "server/proto_convert.h"
#include "server/wire_limits.h"

namespace tensord {

void CommandRunner::RunCall(const CallView& call, v1::Ack* ack) {
  ops_run_.fetch_add(1, std::memory_order_relaxed);
  const auto& table = OpTable();
  const std::string op_name = call.op_id < table.size()
                                  ? table[call.op_id].name
                                  : absl::StrCat("op#", call.op_id);
  absl::StatusOr<SiteText> call_site = CallSite(call);
  const std::string& site = call_site.ok() ? **call_site : *call.site;
  if (call.inputs.size() > kMaxCallHandles ||
      call.outputs.size() > kMaxCallHandles) {  // a packed entry's lists
    return ReportFrameError(
        absl::InvalidArgumentError(
            absl::StrCat("a call names ", call.inputs.size(), " inputs and ",
                         call.outputs.size(), " outputs; the limit is ",
                         kMaxCallHandles, " each (server/wire_limits.h)")),
        op_name, site);
  }
  // Output ids are checked first: a bad id has no entry to carry an error.
  if (!CheckNewOutputs(call.outputs, op_name, site)) return;
  auto fail = [&](std::shared_ptr<const v1::Status> error) {
    NoteError(*error);
    for (uint64_t id : call.outputs) {
      HandleEntry entry;
      entry.error = error;
      Create(id, std::move(entry), ack);
    }
  };
  auto fail_with = [&](const absl::Status& status) {
    fail(errors_.Keep(status, op_name, site));
  };
  if (!call_site.ok()) return fail_with(call_site.status());
  if (call.op_id >= table.size()) {
    return fail_with(absl::InvalidArgumentError(
        absl::StrCat("unknown op id ", call.op_id, " (the catalog has ",
                     table.size(), " ops)")));
  }
  const OpDef& op = table[call.op_id];
  const int num_outputs = static_cast<int>(call.outputs.size());
  if (op.num_outputs >= 0 && num_outputs != op.num_outputs) {
    return fail_with(absl::InvalidArgumentError(
        absl::StrCat(op.name, " has ", op.num_outputs, " output(s), but ",
                     num_outputs, " output handle(s) were given")));
  }
  absl::InlinedVector<Tensor, 4> inputs;  // no heap allocation per op
  inputs.reserve(call.inputs.size());
  for (uint64_t id : call.inputs) {
    std::shared_ptr<const v1::Status> poisoned;
    auto t = FindTensor(id, &poisoned);
    if (poisoned != nullptr) return fail(poisoned);  // the same error
    if (!t.ok()) return fail_with(t.status());
    inputs.push_back(*std::move(t));
  }
  Attrs storage;
  auto attrs = CallAttrsFromProto(op, *call.attrs, &storage);
  if (!attrs.ok()) return fail_with(attrs.status());
  OpContext ctx = MakeContext();
  ctx.alloc.site = &*call_site;  // Note [Memory history]
  if (grad_enabled_) {
    recorder_.set_site(*call_site);
    ctx.recorder = &recorder_;
  }
  // Test-only: a device that fails here (Note [Sticky device errors]).
  absl::Status injected = InjectedFault(op.name, ctx.device->name());
  if (!injected.ok()) return fail_with(injected);
  if (autocast_.has_value()) {
    absl::Status cast =
        AutocastInputs(AutocastPolicyOf(call.op_id), *autocast_, &inputs, ctx);
    if (!cast.ok()) return fail_with(cast);
  }
  auto outputs = RunRecorded(op, inputs, **attrs, ctx);
  if (!outputs.ok()) return fail_with(outputs.status());
  if (static_cast<int>(outputs->size()) != num_outputs) {
    return fail_with(absl::InvalidArgumentError(
        absl::StrCat(op.name, " produced ", outputs->size(), " output(s), but ",
                     num_outputs, " output handle(s) were given")));
  }
  for (int i = 0; i < num_outputs; ++i) {
    HandleEntry entry;
    entry.tensor = std::move((*outputs)[i]);
    Create(call.outputs[i], std::move(entry), ack);
  }
}

}  // namespace tensord

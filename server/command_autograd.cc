// CommandRunner's autograd commands: Backward, SetRequiresGrad, GetGrad and
// SetGrad (docs/protocol.md "Autograd"). The engine itself is
// runtime/autograd; this file maps handles to tensors and errors to the
// protocol (poisoned outputs, the next SyncDone, Error frames).
#include "absl/strings/str_cat.h"
#include "runtime/autograd/engine.h"
#include "server/command_runner.h"
#include "server/proto_convert.h"

namespace tensord {

void CommandRunner::RunBackward(const v1::Backward& b, v1::Ack* ack) {
  ops_run_.fetch_add(1, std::memory_order_relaxed);
  if (!CheckNewOutputs(b.outputs(), "backward", b.site())) return;
  auto fail = [&](const v1::Status& error) {
    NoteError(error);
    // One kept status shared by the outputs (Note [Kept errors]).
    std::shared_ptr<const v1::Status> kept =
        b.outputs_size() == 0 ? nullptr : errors_.Keep(error);
    for (uint64_t id : b.outputs()) {
      HandleEntry entry;
      entry.error = kept;
      Create(id, std::move(entry), ack);
    }
    if (b.outputs_size() == 0) {  // nothing to carry it: an Error frame too
      v1::ServerFrame frame;
      frame.mutable_error()->set_request_id(0);
      *frame.mutable_error()->mutable_status() = error;
      sink_->Send(std::move(frame));
    }
  };
  auto fail_with = [&](const absl::Status& s) {
    fail(StatusToProto(s, "backward", b.site()));
  };
  if (b.outputs_size() != b.inputs_size()) {
    return fail_with(absl::InvalidArgumentError(
        absl::StrCat("backward: ", b.inputs_size(),
                     " inputs need as many outputs, got ", b.outputs_size())));
  }
  if (b.grads_size() != 0 && b.grads_size() != b.roots_size()) {
    return fail_with(absl::InvalidArgumentError(
        absl::StrCat("backward: ", b.grads_size(), " grads for ",
                     b.roots_size(), " roots (give one per root or none)")));
  }
  std::vector<Tensor> roots, grads, inputs;
  auto gather = [&](const auto& ids, std::vector<Tensor>* out,
                    bool zero_is_none) -> bool {
    for (uint64_t id : ids) {
      if (zero_is_none && id == 0) {
        out->emplace_back();
        continue;
      }
      std::shared_ptr<const v1::Status> poisoned;
      auto t = FindTensor(id, &poisoned);
      if (poisoned != nullptr) {
        fail(*poisoned);
        return false;
      }
      if (!t.ok()) {
        fail_with(t.status());
        return false;
      }
      out->push_back(*std::move(t));
    }
    return true;
  };
  if (!gather(b.roots(), &roots, false) || !gather(b.grads(), &grads, true) ||
      !gather(b.inputs(), &inputs, false)) {
    return;
  }
  OpContext ctx = MakeContext();
  const SiteText site = InlineSite(b.site());
  ctx.alloc.site = &site;  // Note [Memory history]
  if (b.create_graph()) {
    recorder_.set_site(site);
    ctx.recorder = &recorder_;
  }
  BackwardOptions options;
  options.retain_graph = b.retain_graph() || b.create_graph();
  options.create_graph = b.create_graph();
  options.allow_unused = b.allow_unused();
  auto result = tensord::RunBackward(roots, grads, inputs, options, ctx);
  if (!result.ok()) return fail_with(result.status());
  for (int k = 0; k < b.outputs_size(); ++k) {
    HandleEntry entry;
    Tensor& g = (*result)[k];
    if (g.defined()) entry.tensor = b.create_graph() ? g : g.Detached();
    Create(b.outputs(k), std::move(entry), ack);
  }
}

void CommandRunner::RunSetRequiresGrad(const v1::SetRequiresGrad& cmd) {
  const char* what = "requires_grad_";
  std::shared_ptr<const v1::Status> poisoned;
  auto t = FindTensor(cmd.handle(), &poisoned);
  if (poisoned != nullptr) {
    NoteError(*poisoned);
    return;
  }
  if (!t.ok()) return ReportFrameError(t.status(), what, cmd.site());
  if (!t->is_leaf()) {
    if (cmd.requires_grad()) return;  // it already does
    return ReportFrameError(
        absl::InvalidArgumentError(
            "you can only change requires_grad flags of leaf variables. If "
            "you want to use a computed variable in a subgraph that doesn't "
            "require differentiation use var_no_grad = var.detach()."),
        what, cmd.site());
  }
  if (cmd.requires_grad() && !IsFloating(t->dtype())) {
    return ReportFrameError(
        absl::InvalidArgumentError(absl::StrCat(
            "only Tensors of floating point dtype can require gradients, "
            "got ",
            DTypeName(t->dtype()))),
        what, cmd.site());
  }
  t->EnsureAutograd().requires_grad = cmd.requires_grad();
}

void CommandRunner::RunGetGrad(const v1::GetGrad& cmd, v1::Ack* ack) {
  const uint64_t ids[] = {cmd.output()};
  if (!CheckNewOutputs(ids, "grad", "")) return;
  HandleEntry entry;
  std::shared_ptr<const v1::Status> poisoned;
  auto t = FindTensor(cmd.handle(), &poisoned);
  if (poisoned != nullptr) {
    entry.error = poisoned;
  } else if (!t.ok()) {
    entry.error = errors_.Keep(t.status(), "grad", "");
    NoteError(*entry.error);
  } else if (t->autograd() != nullptr && t->autograd()->grad.defined()) {
    Tensor& grad = t->autograd()->grad;
    grad.EnsureAutograd();  // the handle names this very tensor
    entry.tensor = grad;
  }
  Create(cmd.output(), std::move(entry), ack);
}

void CommandRunner::RunSetGrad(const v1::SetGrad& cmd) {
  const char* what = "set_grad";
  std::shared_ptr<const v1::Status> poisoned;
  auto t = FindTensor(cmd.handle(), &poisoned);
  if (poisoned != nullptr) {
    NoteError(*poisoned);
    return;
  }
  if (!t.ok()) return ReportFrameError(t.status(), what, "");
  Tensor grad;
  if (cmd.grad() != 0) {
    auto g = FindTensor(cmd.grad(), &poisoned);
    if (poisoned != nullptr) {
      NoteError(*poisoned);
      return;
    }
    if (!g.ok()) return ReportFrameError(g.status(), what, "");
    grad = *std::move(g);
    if (grad.shape() != t->shape() || grad.dtype() != t->dtype() ||
        grad.device() != t->device()) {
      return ReportFrameError(
          absl::InvalidArgumentError(absl::StrCat(
              "assigned grad (", DTypeName(grad.dtype()),
              ShapeToString(grad.shape()), " on ", grad.device()->name(),
              ") must match the tensor (", DTypeName(t->dtype()),
              ShapeToString(t->shape()), " on ", t->device()->name(), ")")),
          what, "");
    }
  }
  AutogradMeta& meta = t->EnsureAutograd();
  // x.grad = x (or y.grad = x after x.grad = y) would be a reference cycle:
  // with no garbage collector in the daemon its memory would never return,
  // not even at session end (found by the fuzzer, tests/fuzz).
  int steps = 0;
  for (const AutogradMeta* m = grad.autograd(); m != nullptr && steps < 1 << 16;
       m = m->grad.autograd(), ++steps) {
    if (m == &meta) {
      return ReportFrameError(
          absl::InvalidArgumentError(
              absl::StrCat("assigning handle ", cmd.grad(),
                           " as the .grad of handle ", cmd.handle(),
                           " would make a reference cycle (its .grad chain "
                           "leads back to ",
                           cmd.handle(), "); assign a clone() instead")),
          what, "");
    }
  }
  meta.grad = grad;
}

}  // namespace tensord

// Autograd support rows (detach) and the optimizer rows: the fused steps
// sgd_step (sgd_step_ops.cc) and adam_step (adam_step_ops.cc), one command
// per step over all parameters, and zero_grads.
//
// The steps update params (and their state buffers) in place and bump their
// versions; they have no outputs and are not differentiable. State lives in
// daemon tensors the client created (zeros_like) and passes every step.
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"
#include "runtime/ops/optim_step.h"

namespace tensord {
namespace {

using Outs = absl::StatusOr<std::vector<Tensor>>;

Outs Detach(absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  const Tensor& t = in[0];
  return std::vector<Tensor>{t.AsStrided(t.shape(), t.strides(), t.offset())};
}

// zero_grad(set_to_none=False) without learning which gradients exist (Note
// [Optimizer steps read .grad]): each parameter's .grad, where it has one,
// is zeroed in place.
Outs ZeroGrads(absl::Span<const Tensor> in, const Attrs&,
               const OpContext& ctx) {
  for (const Tensor& p : in) {
    const AutogradMeta* meta = p.autograd();
    if (meta == nullptr || !meta->grad.defined()) continue;
    TD_RETURN_IF_ERROR(Call1("zero_", {meta->grad}, {}, ctx).status());
  }
  return std::vector<Tensor>{};
}

}  // namespace

std::vector<OpDef> OptimOps() {
  std::vector<OpDef> ops;
  OpDef detach = MakeOp("detach", 1, 1, {},
                        "A view of input that does not require grad and has "
                        "no history (shares memory and version counter).");
  detach.view = Detach;
  detach.native_half = true;
  detach.differentiable = false;
  ops.push_back(std::move(detach));
  ops.push_back(SgdStepOp());
  ops.push_back(AdamStepOp());
  OpDef zero = MakeOp("zero_grads", 1, -1, {},
                      "Zeroes each param's .grad in place where it has one "
                      "(torch.optim's zero_grad(set_to_none=False)).");
  zero.composite = ZeroGrads;
  zero.num_outputs = 0;
  zero.differentiable = false;
  ops.push_back(std::move(zero));
  return ops;
}

}  // namespace tensord

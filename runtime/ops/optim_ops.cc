// Autograd support rows (detach) and the optimizer rows: the fused steps
// sgd_step (sgd_step_ops.cc) and adam_step (adam_step_ops.cc), one command
// per step over all parameters, zero_grads and clip_grad_norm_.
//
// The steps update params (and their state buffers) in place and bump their
// versions; they have no outputs and are not differentiable. State lives in
// daemon tensors the client created (zeros_like) and passes every step.
#include <cmath>

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

// torch.nn.utils.clip_grad_norm_ over the params' .grad, where they have one
// (Note [Optimizer steps read .grad]: the client need not learn which do):
// the norm of the per-gradient norms, each gradient scaled in place by
// min(1, max_norm / (total + 1e-6)); returns the total before scaling (0 with
// no gradient at all, on the first param's device).
Outs ClipGradNorm(absl::Span<const Tensor> in, const Attrs& attrs,
                  const OpContext& ctx) {
  const double max_norm = attrs.Float("max_norm"), p = attrs.Float("norm_type");
  const int64_t n = static_cast<int64_t>(in.size());
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> with,
                      optim_step::WithGrads("clip_grad_norm_", in, n, 1));
  const absl::Span<const Tensor> grads =
      absl::MakeConstSpan(with).subspan(with.size() / 2);
  if (grads.empty()) {
    TD_ASSIGN_OR_RETURN(Tensor zero,
                        Scalar(0, DType::kFloat32, in[0].device(), ctx));
    return std::vector<Tensor>{zero};
  }
  ComposeOps op{ctx};
  const bool inf = std::isinf(p) && p > 0;
  std::vector<Tensor> norms;
  for (const Tensor& g : grads) {
    TD_RETURN_IF_ERROR(RequireFloating(g, "clip_grad_norm_"));
    absl::StatusOr<Tensor> norm =
        inf ? op("amax", {*op("abs", {g})}) : op("norm", {g}, {{"p", p}});
    TD_RETURN_IF_ERROR(norm.status());
    norms.push_back(*std::move(norm));
  }
  TD_ASSIGN_OR_RETURN(Tensor stacked, op("stack", norms));
  TD_ASSIGN_OR_RETURN(Tensor total, inf ? op("amax", {stacked})
                                        : op("norm", {stacked}, {{"p", p}}));
  TD_ASSIGN_OR_RETURN(Tensor eps, op.Num(1e-6, total));
  TD_ASSIGN_OR_RETURN(Tensor denom, op("add", {total, eps}));
  TD_ASSIGN_OR_RETURN(Tensor max, op.Num(max_norm, total));
  TD_ASSIGN_OR_RETURN(Tensor coef, op("div", {max, denom}));
  TD_ASSIGN_OR_RETURN(coef, op("clamp", {coef}, {{"max", 1.0}}));
  for (const Tensor& g : grads) {
    TD_RETURN_IF_ERROR(op("mul_", {g, coef}).status());
  }
  return std::vector<Tensor>{total};
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
  OpDef clip =
      MakeOp("clip_grad_norm_", 1, -1,
             {Required("max_norm", AttrType::kFloat),
              Optional("norm_type", AttrType::kFloat, 2.0)},
             "torch.nn.utils.clip_grad_norm_ over the params' .grad where they "
             "have one: scales them in place; returns the total norm before.");
  clip.composite = ClipGradNorm;
  clip.differentiable = false;
  clip.examples = {Example({{2, 3}, {4}}, {{"max_norm", 1.0}})};
  ops.push_back(std::move(clip));
  return ops;
}

}  // namespace tensord

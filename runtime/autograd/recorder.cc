#include "runtime/autograd/recorder.h"

#include "absl/strings/str_cat.h"
#include "runtime/autograd/node.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

// Outputs without history; an in-place row's output is its input 0.
std::vector<Tensor> Plain(const OpDef& op, absl::Span<const Tensor> inputs,
                          std::vector<Tensor> outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (op.inplace && i == 0) {
      outputs[0] = inputs[0];
    } else {
      outputs[i].set_autograd(nullptr);
    }
  }
  return outputs;
}

absl::Status CheckInPlace(const OpDef& op, const Tensor& self) {
  if (self.requires_grad() && self.is_leaf()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a leaf Variable that requires grad is being used in an in-place "
        "operation (",
        op.name, "). Run it under no_grad(), or on a clone() of the tensor."));
  }
  if (self.autograd() != nullptr && self.autograd()->is_view &&
      self.requires_grad()) {
    return absl::InvalidArgumentError(absl::StrCat(
        op.name,
        ": in-place writes into a view of a tensor that requires grad are not "
        "supported by tensord's autograd; clone() the view first"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> RunRecorded(const OpDef& op,
                                                absl::Span<const Tensor> inputs,
                                                const Attrs& attrs,
                                                const OpContext& ctx) {
  if (ctx.recorder != nullptr) {
    return ctx.recorder->Run(op, inputs, attrs, ctx);
  }
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp(op, inputs, attrs, ctx));
  return Plain(op, inputs, std::move(out));
}

absl::StatusOr<std::vector<Tensor>> GraphRecorder::Run(
    const OpDef& op, absl::Span<const Tensor> inputs, const Attrs& attrs,
    const OpContext& ctx) {
  OpContext plain = ctx;
  plain.recorder = nullptr;
  bool any = false;
  for (const Tensor& t : inputs) any |= t.requires_grad();
  if (!any || !op.differentiable) {
    TD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                        RunOp(op, inputs, attrs, plain));
    return Plain(op, inputs, std::move(out));
  }
  if (op.inplace) TD_RETURN_IF_ERROR(CheckInPlace(op, inputs[0]));
  if (op.backward == nullptr) {
    if (op.composite != nullptr && !op.inplace) {
      return RunOp(op, inputs, attrs, ctx);  // its inner calls record
    }
    return absl::InternalError(absl::StrCat("tensord bug: differentiable op ",
                                            op.name,
                                            " has no backward formula"));
  }
  std::vector<TensorSpec> specs;
  for (const Tensor& t : inputs) {
    specs.push_back({t.dtype(), t.shape(), t.device()});
  }
  auto node = std::make_shared<OpNode>(op, attrs, site_, std::move(specs));
  for (int i : op.save_inputs) {
    if (i >= static_cast<int>(inputs.size())) continue;  // optional input
    const Tensor& t = inputs[i];
    if (op.inplace && i == 0) {  // the old value, with its old history
      TD_ASSIGN_OR_RETURN(std::vector<Tensor> old_value,
                          RunOp(*FindOp("clone"), {t}, Attrs(), plain));
      const Tensor& old = old_value[0];
      std::shared_ptr<AutogradMeta> snapshot;
      if (t.autograd() != nullptr) {
        snapshot = std::make_shared<AutogradMeta>();
        snapshot->requires_grad = t.requires_grad();
        snapshot->grad_fn = t.autograd()->grad_fn;
        snapshot->output_nr = t.autograd()->output_nr;
      }
      node->SaveInput(i, SavedTensor::Input(old, std::move(snapshot)));
    } else {
      node->SaveInput(i, SavedTensor::Input(t, t.autograd_ptr()));
    }
  }
  for (const Tensor& t : inputs) node->next_edges().push_back(GradientEdge(t));
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp(op, inputs, attrs, plain));
  std::vector<TensorSpec> out_specs;
  for (size_t i = 0; i < out.size(); ++i) {
    Tensor& t = out[i];
    out_specs.push_back({t.dtype(), t.shape(), t.device()});
    auto meta = std::make_shared<AutogradMeta>();
    if (IsFloating(t.dtype())) {
      meta->requires_grad = true;
      meta->grad_fn = node;
      meta->output_nr = static_cast<int>(i);
      meta->is_view = op.view != nullptr;
    }
    if (op.inplace && i == 0) {  // rebase: the same tensor, a new history
      t = inputs[0];
      AutogradMeta& self = t.EnsureAutograd();
      self.requires_grad = true;
      self.grad_fn = node;
      self.output_nr = 0;
    } else {
      t.set_autograd(std::move(meta));
    }
  }
  node->SetOutputs(std::move(out_specs));
  if (counter_ != nullptr) node->CountIn(counter_);
  for (int i : op.save_outputs) {
    node->SaveOutput(i, SavedTensor::Output(out[i], i, out[i].requires_grad(),
                                            op.optional_outputs));
  }
  return out;
}

}  // namespace tensord

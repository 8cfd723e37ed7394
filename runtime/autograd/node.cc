#include "runtime/autograd/node.h"

#include <atomic>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/grad_ctx.h"

namespace tensord {
namespace {

std::atomic<uint64_t> next_sequence_nr{0};

// Nodes released while a release is being drained wait here instead of
// being destroyed recursively (a 100k-op chain must not overflow the stack).
struct PendingRelease {
  std::vector<std::shared_ptr<Node>> nodes;
  bool draining = false;
};
thread_local PendingRelease pending;

}  // namespace

Node::Node(int num_outputs)
    : num_outputs_(num_outputs), sequence_nr_(next_sequence_nr++) {}

Node::~Node() {
  for (Edge& e : next_edges_) ReleaseNode(std::move(e.fn));
}

void ReleaseNode(std::shared_ptr<Node> node) {
  if (node == nullptr || node.use_count() > 1) return;
  pending.nodes.push_back(std::move(node));
  if (pending.draining) return;
  pending.draining = true;
  while (!pending.nodes.empty()) {
    std::shared_ptr<Node> n = std::move(pending.nodes.back());
    pending.nodes.pop_back();
    n.reset();  // its destructor queues its own next nodes
  }
  pending.draining = false;
}

SavedTensor SavedTensor::Input(const Tensor& t,
                               std::shared_ptr<AutogradMeta> meta) {
  SavedTensor s;
  s.data_ = t.Detached();
  s.meta_ = std::move(meta);
  s.version_ = t.storage()->version();
  return s;
}

SavedTensor SavedTensor::Output(const Tensor& t, int output_nr,
                                bool requires_grad, bool optional) {
  SavedTensor s;
  s.data_ = t.Detached();
  s.is_output_ = true;
  s.optional_ = optional;
  s.output_nr_ = output_nr;
  s.requires_grad_ = requires_grad;
  s.version_ = t.storage()->version();
  return s;
}

absl::StatusOr<Tensor> SavedTensor::Unpack(const std::shared_ptr<Node>& owner,
                                           const std::string& what,
                                           const std::string& site) const {
  const uint64_t now = data_.storage()->version();
  if (now != version_ && optional_) return Tensor();
  if (now != version_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "one of the variables needed for gradient computation has been "
        "modified by an inplace operation: ",
        what, " (saved at version ", version_, ") is now at version ", now,
        site.empty() ? "" : absl::StrCat(" (called at ", site, ")"),
        ". Clone the tensor before modifying it in place, or modify a copy."));
  }
  Tensor t = data_;
  if (is_output_) {
    if (requires_grad_) {
      auto meta = std::make_shared<AutogradMeta>();
      meta->requires_grad = true;
      meta->grad_fn = owner;
      meta->output_nr = output_nr_;
      t.set_autograd(std::move(meta));
    }
  } else {
    t.set_autograd(meta_);
  }
  return t;
}

void SavedTensor::Reset() {
  if (meta_ != nullptr && meta_.use_count() == 1) {
    ReleaseNode(std::move(meta_->grad_fn));
  }
  meta_.reset();
  data_ = Tensor();
}

std::string BackwardName(const std::string& op) {
  std::string name;
  bool upper = true;
  for (char c : op) {
    if (c == '_') {
      upper = true;
      continue;
    }
    name += upper ? static_cast<char>(std::toupper(c)) : c;
    upper = false;
  }
  return name + "Backward0";
}

OpNode::OpNode(const OpDef& op, Attrs attrs,
               std::shared_ptr<const std::string> site,
               std::vector<TensorSpec> input_specs)
    : Node(0),
      op_(op),
      attrs_(std::move(attrs)),
      site_(std::move(site)),
      input_specs_(std::move(input_specs)),
      saved_inputs_(input_specs_.size()) {}

OpNode::~OpNode() {
  ReleaseSaved();
  if (counter_ != nullptr) counter_->Remove(counted_);
}

void OpNode::CountIn(std::shared_ptr<MetadataCounter> counter) {
  const size_t specs = input_specs_.size() + output_specs_.size();
  const size_t saved = saved_inputs_.size() + saved_outputs_.size();
  counted_ = sizeof(OpNode) + attrs_.ByteSize() + specs * sizeof(TensorSpec) +
             saved * sizeof(SavedTensor) + next_edges().size() * sizeof(Edge);
  counter_ = std::move(counter);
  counter_->Add(counted_);
}

const std::string& OpNode::site() const {
  static const std::string* const kNone = new std::string();
  return site_ != nullptr ? *site_ : *kNone;
}

std::string OpNode::name() const { return BackwardName(op_.name); }

void OpNode::SetOutputs(std::vector<TensorSpec> specs) {
  output_specs_ = std::move(specs);
  set_num_outputs(static_cast<int>(output_specs_.size()));
  saved_outputs_.resize(output_specs_.size());
}

void OpNode::SaveInput(int i, SavedTensor t) {
  saved_inputs_[i] = std::move(t);
  has_saved_ = true;
}

void OpNode::SaveOutput(int i, SavedTensor t) {
  saved_outputs_[i] = std::move(t);
  has_saved_ = true;
}

void OpNode::ReleaseSaved() {
  if (!has_saved_) return;  // nothing saved: may run again (as PyTorch)
  for (SavedTensor& s : saved_inputs_) s.Reset();
  for (SavedTensor& s : saved_outputs_) s.Reset();
  released_ = true;
}

absl::StatusOr<std::vector<Tensor>> OpNode::Apply(std::vector<Tensor> grads,
                                                  const OpContext& ctx) {
  const int n = static_cast<int>(input_specs_.size());
  std::vector<Tensor> result(n);
  if (released_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Trying to backward through the graph a second time (or directly "
        "access saved tensors after they have already been freed): ",
        name(), " of ", op_.name,
        site().empty() ? "" : absl::StrCat(" at ", site()),
        ". Saved intermediate values of the graph are freed when you call "
        ".backward() or autograd.grad(). Specify retain_graph=True if you "
        "need to backward through the graph a second time."));
  }
  bool any = false;
  for (const Tensor& g : grads) any |= g.defined();
  if (!any) return result;
  const std::shared_ptr<Node> self = shared_from_this();
  std::vector<Tensor> ins(n), outs(output_specs_.size());
  for (int i = 0; i < n; ++i) {
    if (!saved_inputs_[i].defined()) continue;
    TD_ASSIGN_OR_RETURN(
        ins[i],
        saved_inputs_[i].Unpack(
            self, absl::StrCat("the input ", i, " of ", op_.name), site()));
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!saved_outputs_[i].defined()) continue;
    TD_ASSIGN_OR_RETURN(
        outs[i],
        saved_outputs_[i].Unpack(
            self, absl::StrCat("the output ", i, " of ", op_.name), site()));
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined() || !IsFloating(output_specs_[i].dtype)) continue;
    const Shape& s = output_specs_[i].shape;
    TD_ASSIGN_OR_RETURN(
        grads[i], Call1("zeros", {},
                        {{"shape", std::vector<int64_t>(s.begin(), s.end())},
                         {"dtype", output_specs_[i].dtype},
                         {"device", output_specs_[i].device->name()}},
                        ctx));
  }
  std::vector<bool> needs(n);
  for (int i = 0; i < n; ++i) needs[i] = next_edges()[i].valid();
  GradCtx g(ctx, attrs_, std::move(grads), std::move(ins), std::move(outs),
            input_specs_, needs);
  auto prefix = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(name(), " (the backward of ",
                                               op_.name, "): ", s.message()));
  };
  Grads r = op_.backward(g);
  if (static_cast<int>(r.size()) != n) {
    return prefix(absl::InternalError(
        absl::StrCat("tensord bug: the formula gave ", r.size(),
                     " gradients for ", n, " inputs")));
  }
  for (int i = 0; i < n; ++i) {
    if (!needs[i]) continue;
    GradValue v = r[i];
    if (!v.value().ok()) return prefix(v.value().status());
    if (v.empty()) continue;
    // Note [Broadcast reduction]: the one place gradients are summed back
    // to their input's shape and converted to its dtype and device.
    v = g.SumTo(v, input_specs_[i].shape);
    if (v.value().ok() && (v.value()->dtype() != input_specs_[i].dtype ||
                           v.value()->device() != input_specs_[i].device)) {
      v = g.Op("to", {v},
               {{"dtype", input_specs_[i].dtype},
                {"device", input_specs_[i].device->name()}});
    }
    if (!v.value().ok()) return prefix(v.value().status());
    result[i] = *v.value();
  }
  return result;
}

AccumulateGrad::AccumulateGrad(Tensor leaf) : Node(1), leaf_(std::move(leaf)) {}

absl::StatusOr<std::vector<Tensor>> AccumulateGrad::Apply(
    std::vector<Tensor> grads, const OpContext& ctx) {
  Tensor g = grads[0];
  if (!g.defined()) return std::vector<Tensor>{};
  grads.clear();
  AutogradMeta& meta = leaf_.EnsureAutograd();
  const bool create_graph = ctx.recorder != nullptr;
  if (!meta.grad.defined()) {
    // .grad must be a tensor of its own: no aliasing with another gradient,
    // the user's gradient= tensor, or a broadcast view.
    if (g.storage().use_count() > 1 || !g.is_contiguous() || g.offset() != 0) {
      TD_ASSIGN_OR_RETURN(g, Call1("clone", {g}, {}, ctx));
    }
    meta.grad = create_graph ? g : g.Detached();
    meta.grad.EnsureAutograd();
  } else if (create_graph) {
    TD_ASSIGN_OR_RETURN(Tensor sum, Call1("add", {meta.grad, g}, {}, ctx));
    meta.grad = sum;
    meta.grad.EnsureAutograd();
  } else {
    TD_RETURN_IF_ERROR(Call1("add_", {meta.grad, g}, {}, ctx).status());
  }
  return std::vector<Tensor>{};
}

Edge GradientEdge(const Tensor& t) {
  if (!t.requires_grad()) return Edge{};
  AutogradMeta* meta = t.autograd();
  if (meta->grad_fn != nullptr) return Edge{meta->grad_fn, meta->output_nr};
  std::shared_ptr<Node> acc = meta->grad_accumulator.lock();
  if (acc == nullptr) {
    acc = std::make_shared<AccumulateGrad>(t);
    meta->grad_accumulator = acc;
  }
  return Edge{acc, 0};
}

}  // namespace tensord

#include "runtime/autograd/engine.h"

#include <queue>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "runtime/autograd/node.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"

namespace tensord {
namespace {

using Ints = std::vector<int64_t>;

absl::StatusOr<Tensor> RootGrad(const Tensor& root, const Tensor& given,
                                size_t i, const OpContext& ctx) {
  if (given.defined()) {
    if (given.shape() != root.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Mismatch in shape: grad_output[", i, "] has a shape of ",
          ShapeToString(given.shape()), " and output[", i, "] has a shape of ",
          ShapeToString(root.shape())));
    }
    if (given.dtype() == root.dtype() && given.device() == root.device()) {
      return given;
    }
    return Call1("to", {given},
                 {{"dtype", root.dtype()}, {"device", root.device()->name()}},
                 ctx);
  }
  if (root.numel() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "grad can be implicitly created only for scalar outputs; root ", i,
        " has shape ", ShapeToString(root.shape()),
        " (pass gradient= with a tensor of that shape)"));
  }
  return Call1("full", {},
               {{"shape", Ints(root.shape().begin(), root.shape().end())},
                {"fill_value", 1.0},
                {"dtype", root.dtype()},
                {"device", root.device()->name()}},
               ctx);
}

// Adds `g` into slot `slot` of `buffer` (sized on first use).
absl::Status Accumulate(std::vector<Tensor>* buffer, Node* node, int slot,
                        Tensor g, const OpContext& ctx) {
  if (buffer->empty()) buffer->resize(node->num_outputs());
  Tensor& cur = (*buffer)[slot];
  if (!cur.defined()) {
    cur = std::move(g);
    return absl::OkStatus();
  }
  TD_ASSIGN_OR_RETURN(cur, Call1("add", {cur, g}, {}, ctx));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> RunBackward(
    const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads,
    const std::vector<Tensor>& inputs, const BackwardOptions& options,
    const OpContext& ctx) {
  if (!root_grads.empty() && root_grads.size() != roots.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("backward got ", root_grads.size(), " gradients for ",
                     roots.size(), " roots"));
  }
  if (roots.empty()) {
    return absl::InvalidArgumentError("backward needs at least one root");
  }
  absl::flat_hash_map<Node*, std::vector<Tensor>> buffers;
  std::vector<std::shared_ptr<Node>> root_nodes;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].requires_grad()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "element ", i,
          " of tensors does not require grad and does not have a grad_fn"));
    }
    TD_ASSIGN_OR_RETURN(
        Tensor g,
        RootGrad(roots[i], i < root_grads.size() ? root_grads[i] : Tensor(), i,
                 ctx));
    Edge e = GradientEdge(roots[i]);
    TD_RETURN_IF_ERROR(
        Accumulate(&buffers[e.fn.get()], e.fn.get(), e.input_nr, g, ctx));
    root_nodes.push_back(e.fn);
  }
  // Dependency counts over everything reachable from the roots.
  absl::flat_hash_map<Node*, int> deps;
  std::vector<Node*> stack;
  for (auto& n : root_nodes) {
    if (deps.emplace(n.get(), 0).second) stack.push_back(n.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      auto [it, fresh] = deps.emplace(e.fn.get(), 0);
      ++it->second;
      if (fresh) stack.push_back(e.fn.get());
    }
  }
  // A topological order: ready nodes by descending sequence number.
  auto later = [](Node* a, Node* b) {
    return a->sequence_nr() < b->sequence_nr();
  };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later)> ready(later);
  absl::flat_hash_map<Node*, int> pending = deps;
  for (auto& [n, d] : deps) {
    if (d == 0) ready.push(n);
  }
  std::vector<Node*> order;
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    order.push_back(n);
    for (const Edge& e : n->next_edges()) {
      if (e.valid() && --pending[e.fn.get()] == 0) ready.push(e.fn.get());
    }
  }
  // autograd.grad: the edges whose gradients are wanted, and the nodes that
  // lead to them (the only ones that run).
  const bool capture = !inputs.empty();
  std::vector<Edge> targets;
  absl::flat_hash_map<Node*, bool> needed;
  if (capture) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Tensor& t = inputs[k];
      if (!t.requires_grad()) {
        return absl::InvalidArgumentError(
            absl::StrCat("One of the differentiated Tensors (input ", k,
                         ") does not require grad"));
      }
      if (t.grad_fn() != nullptr) {
        targets.push_back(Edge{t.grad_fn(), t.autograd()->output_nr});
      } else {
        targets.push_back(Edge{t.autograd()->grad_accumulator.lock(), 0});
      }
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      bool need = false;
      for (const Edge& t : targets) need |= t.fn.get() == *it;
      for (const Edge& e : (*it)->next_edges()) {
        if (e.valid()) need |= needed[e.fn.get()];
      }
      needed[*it] = need;
    }
  }
  std::vector<Tensor> captured(inputs.size());
  for (Node* n : order) {
    std::vector<Tensor> grads = std::move(buffers[n]);
    buffers.erase(n);
    if (grads.empty()) grads.resize(n->num_outputs());
    if (capture) {
      for (size_t k = 0; k < targets.size(); ++k) {
        if (targets[k].fn.get() == n) captured[k] = grads[targets[k].input_nr];
      }
      if (!needed[n] || dynamic_cast<AccumulateGrad*>(n) != nullptr) continue;
    }
    const uint64_t started = ctx.phases != nullptr ? PhaseClockNs() : 0;
    TD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                        n->Apply(std::move(grads), ctx));
    if (ctx.phases != nullptr) {  // Note [Op phases]: the node's span
      ctx.phases->spans.push_back(
          PhaseSpan{n->name(), started, PhaseClockNs() - started});
    }
    if (!options.retain_graph) n->ReleaseSaved();
    auto& edges = n->next_edges();
    for (size_t j = 0; j < edges.size() && j < out.size(); ++j) {
      if (!edges[j].valid() || !out[j].defined()) continue;
      Node* next = edges[j].fn.get();
      TD_RETURN_IF_ERROR(Accumulate(&buffers[next], next, edges[j].input_nr,
                                    std::move(out[j]), ctx));
    }
  }
  for (size_t k = 0; k < captured.size(); ++k) {
    if (!captured[k].defined() && !options.allow_unused) {
      return absl::InvalidArgumentError(
          absl::StrCat("One of the differentiated Tensors (input ", k,
                       ") appears to not have been used in the graph. Set "
                       "allow_unused=True if this is the desired behavior."));
    }
  }
  return captured;
}

}  // namespace tensord

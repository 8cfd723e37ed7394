// The autograd graph: nodes, edges and saved tensors.
//
// A Node is the backward of one recorded op call (OpNode) or the sink of a
// leaf (AccumulateGrad). Its next edges point at the nodes producing the
// gradients of its inputs; tensors own their grad_fn (shared_ptr), nodes own
// the nodes they feed, so releasing the last handle of a graph's outputs
// frees the whole graph and its saved tensors (deleted iteratively: deep
// graphs do not recurse). Thread-compatible: one session's executor only.
#ifndef TENSORD_RUNTIME_AUTOGRAD_NODE_H_
#define TENSORD_RUNTIME_AUTOGRAD_NODE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/ops/op_def.h"
#include "runtime/tensor.h"

namespace tensord {

struct Edge {
  std::shared_ptr<Node> fn;
  int input_nr = 0;  // which output slot of fn the gradient belongs to
  bool valid() const { return fn != nullptr; }
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  explicit Node(int num_outputs);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // "MulBackward0", "AccumulateGrad".
  virtual std::string name() const = 0;
  // From the gradients of this node's outputs (undefined: none flowed) to one
  // gradient per next edge (undefined: none). `ctx.recorder` is set when
  // backward runs with create_graph.
  virtual absl::StatusOr<std::vector<Tensor>> Apply(std::vector<Tensor> grads,
                                                    const OpContext& ctx) = 0;
  // Frees saved tensors (backward without retain_graph).
  virtual void ReleaseSaved() {}

  std::vector<Edge>& next_edges() { return next_edges_; }
  int num_outputs() const { return num_outputs_; }
  uint64_t sequence_nr() const { return sequence_nr_; }

 protected:
  void set_num_outputs(int n) { num_outputs_ = n; }

 private:
  std::vector<Edge> next_edges_;
  int num_outputs_;
  uint64_t sequence_nr_;
};

// Drops a reference to a node without recursing into its subgraph.
void ReleaseNode(std::shared_ptr<Node> node);

// A tensor a formula needs at backward, with the storage version it had
// when saved (Note [Versions]: an in-place write in between is an error).
class SavedTensor {
 public:
  SavedTensor() = default;
  // An input: `meta` is its autograd identity (for create_graph).
  static SavedTensor Input(const Tensor& t, std::shared_ptr<AutogradMeta> meta);
  // An output of the owning node: its identity is rebuilt from the node at
  // unpack time (holding it would make a cycle). `optional`: the formula can
  // do without it (GradRow::optional_outputs in derivatives.h).
  static SavedTensor Output(const Tensor& t, int output_nr, bool requires_grad,
                            bool optional = false);

  bool defined() const { return data_.defined(); }
  // FAILED_PRECONDITION if the storage was modified since (an optional
  // output: an undefined tensor instead); `what` is e.g. "the input 0 of
  // mul".
  absl::StatusOr<Tensor> Unpack(const std::shared_ptr<Node>& owner,
                                const std::string& what,
                                const std::string& site) const;
  void Reset();

 private:
  Tensor data_;
  std::shared_ptr<AutogradMeta> meta_;
  bool is_output_ = false;
  bool optional_ = false;
  bool requires_grad_ = false;
  int output_nr_ = 0;
  uint64_t version_ = 0;
};

// The backward of one recorded call of an op-table row.
// Counts the bytes of metadata a session's graph nodes hold, wherever they
// are freed (server/metadata_charge.h implements it: Note [Metadata charge]).
class MetadataCounter {
 public:
  virtual ~MetadataCounter() = default;
  virtual void Add(size_t bytes) = 0;
  virtual void Remove(size_t bytes) = 0;
};

class OpNode : public Node {
 public:
  // `site` is shared with every node of the same call site (a session keeps
  // each text once: Note [Wire limits] in server/wire_limits.h); null: none.
  OpNode(const OpDef& op, Attrs attrs, std::shared_ptr<const std::string> site,
         std::vector<TensorSpec> input_specs);
  ~OpNode() override;

  std::string name() const override;
  absl::StatusOr<std::vector<Tensor>> Apply(std::vector<Tensor> grads,
                                            const OpContext& ctx) override;
  void ReleaseSaved() override;

  void SetOutputs(std::vector<TensorSpec> specs);
  void SaveInput(int i, SavedTensor t);
  void SaveOutput(int i, SavedTensor t);
  // Counts this node's bytes on `counter` until it is destroyed.
  void CountIn(std::shared_ptr<MetadataCounter> counter);

 private:
  const OpDef& op_;
  // The call site's text, shared (not copied per node).
  const std::string& site() const;

  Attrs attrs_;
  std::shared_ptr<const std::string> site_;
  std::vector<TensorSpec> input_specs_, output_specs_;
  std::vector<SavedTensor> saved_inputs_, saved_outputs_;
  bool has_saved_ = false;
  bool released_ = false;
  std::shared_ptr<MetadataCounter> counter_;
  size_t counted_ = 0;
};

// The sink of a leaf that requires grad: adds incoming gradients to .grad.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf);
  std::string name() const override { return "AccumulateGrad"; }
  absl::StatusOr<std::vector<Tensor>> Apply(std::vector<Tensor> grads,
                                            const OpContext& ctx) override;
  const Tensor& leaf() const { return leaf_; }

 private:
  Tensor leaf_;  // shares the leaf's AutogradMeta
};

// The edge along which a gradient for `t` flows: its grad_fn, or its
// AccumulateGrad for a leaf that requires grad (created on first use), or
// none.
Edge GradientEdge(const Tensor& t);

// "mul" -> "MulBackward0", "max_pool2d" -> "MaxPool2dBackward0".
std::string BackwardName(const std::string& op);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_AUTOGRAD_NODE_H_

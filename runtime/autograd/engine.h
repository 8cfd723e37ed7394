// The backward engine: one call runs a whole backward pass in the daemon.
//
// Note [Engine]: from the roots' gradient edges it counts, for every node
// reachable, how many edges lead into it, then runs nodes whose count has
// dropped to zero (highest sequence number first among those ready), adding
// the gradients arriving at each node's outputs. Broadcast gradients are
// reduced to input shapes inside OpNode::Apply (Note [Broadcast reduction]).
// With `inputs` (autograd.grad) only nodes leading to them run and their
// gradients are returned instead of accumulated into .grad. Without
// retain_graph each node frees its saved tensors right after it ran.
#ifndef TENSORD_RUNTIME_AUTOGRAD_ENGINE_H_
#define TENSORD_RUNTIME_AUTOGRAD_ENGINE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "runtime/ops/op_def.h"

namespace tensord {

struct BackwardOptions {
  bool retain_graph = false;
  bool create_graph = false;
  bool allow_unused = false;
};

// `root_grads`: one per root, or empty/undefined entries for implicit ones
// (scalar roots only). With `inputs` empty, gradients accumulate into the
// .grad of the leaves and the result is empty; otherwise the result holds
// one gradient per input (undefined: unused, when allow_unused).
// `ctx` gives devices and allocation; its recorder must be set exactly when
// create_graph (the formulas are then recorded).
absl::StatusOr<std::vector<Tensor>> RunBackward(
    const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads,
    const std::vector<Tensor>& inputs, const BackwardOptions& options,
    const OpContext& ctx);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_AUTOGRAD_ENGINE_H_

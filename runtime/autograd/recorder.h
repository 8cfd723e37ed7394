// Recording: running op-table rows while building the autograd graph.
//
// Note [Recording]: with grad mode on, a call of a differentiable row whose
// inputs require grad gets an OpNode (edges to the inputs' grad_fn or
// AccumulateGrad, the inputs/outputs its formula reads saved with their
// versions); its floating outputs require grad and name the node. Composite
// rows without a formula are recorded through the rows they call. In-place
// rows rebase input 0's history onto the new node (the tensor keeps its
// identity); in-place writes into a leaf that requires grad, or into a view
// recorded in the graph, are refused. Other calls produce outputs with no
// history (fresh autograd identity), except in-place ones: output 0 is
// input 0.
#ifndef TENSORD_RUNTIME_AUTOGRAD_RECORDER_H_
#define TENSORD_RUNTIME_AUTOGRAD_RECORDER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/op_def.h"

namespace tensord {

class GraphRecorder : public Recorder {
 public:
  // The client call site recorded in the nodes made from now on: shared by
  // them, never copied (a session keeps each text once; null: none).
  void set_site(std::shared_ptr<const std::string> site) {
    site_ = std::move(site);
  }
  // Where the nodes made from now on count their bytes (null: nowhere).
  void set_counter(std::shared_ptr<MetadataCounter> counter) {
    counter_ = std::move(counter);
  }
  absl::StatusOr<std::vector<Tensor>> Run(const OpDef& op,
                                          absl::Span<const Tensor> inputs,
                                          const Attrs& attrs,
                                          const OpContext& ctx) override;

 private:
  std::shared_ptr<const std::string> site_;
  std::shared_ptr<MetadataCounter> counter_;
};

// Runs `op`: through ctx.recorder when set (grad mode), else plainly with
// outputs that carry no history.
absl::StatusOr<std::vector<Tensor>> RunRecorded(const OpDef& op,
                                                absl::Span<const Tensor> inputs,
                                                const Attrs& attrs,
                                                const OpContext& ctx);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_AUTOGRAD_RECORDER_H_

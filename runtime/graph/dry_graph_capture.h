// A GraphCaptureBackend that captures nothing and launches nothing: work
// queued while "capturing" runs as usual, and its graphs are empty. It
// counts captures and launches and can be told to fail a capture the way
// CUDA does when a synchronising call invalidates it. The tests' fake on
// machines without a GPU, and the runner's stand-in while planned steps are
// only counted (Note [Graph replay], server/graph_replay/replay_tracker.h).
#ifndef TENSORD_RUNTIME_GRAPH_DRY_GRAPH_CAPTURE_H_
#define TENSORD_RUNTIME_GRAPH_DRY_GRAPH_CAPTURE_H_

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "runtime/graph/graph_capture.h"

namespace tensord {

struct DryGraphCounts {
  int begun = 0;
  int ended = 0;     // captures that became graphs
  int aborted = 0;   // dropped before End
  int launches = 0;  // of every graph made
  int live_graphs = 0;
};

class DryGraphCapture : public GraphCaptureBackend {
 public:
  // The next End fails with `status` (the capture was invalidated).
  void FailNextCapture(absl::Status status) { fail_next_ = std::move(status); }
  const DryGraphCounts& counts() const { return *counts_; }

  absl::StatusOr<std::unique_ptr<StreamCapture>> Begin(
      StreamHandle stream) override {
    (void)stream;
    ++counts_->begun;
    absl::Status fail = std::move(fail_next_);
    fail_next_ = absl::OkStatus();
    return std::unique_ptr<StreamCapture>(new Capture(counts_, fail));
  }

 private:
  class Graph : public ExecutableGraph {
   public:
    explicit Graph(std::shared_ptr<DryGraphCounts> counts)
        : counts_(std::move(counts)) {
      ++counts_->live_graphs;
    }
    ~Graph() override { --counts_->live_graphs; }
    absl::Status Launch(StreamHandle) override {
      ++counts_->launches;
      return absl::OkStatus();
    }
    size_t num_nodes() const override { return 1; }

   private:
    std::shared_ptr<DryGraphCounts> counts_;
  };

  class Capture : public StreamCapture {
   public:
    Capture(std::shared_ptr<DryGraphCounts> counts, absl::Status fail)
        : counts_(std::move(counts)), fail_(std::move(fail)) {}
    ~Capture() override {
      if (!ended_) ++counts_->aborted;
    }
    absl::StatusOr<std::unique_ptr<ExecutableGraph>> End() override {
      ended_ = true;
      if (!fail_.ok()) return fail_;
      ++counts_->ended;
      return std::unique_ptr<ExecutableGraph>(new Graph(counts_));
    }

   private:
    std::shared_ptr<DryGraphCounts> counts_;
    absl::Status fail_;
    bool ended_ = false;
  };

  std::shared_ptr<DryGraphCounts> counts_ = std::make_shared<DryGraphCounts>();
  absl::Status fail_next_;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_GRAPH_DRY_GRAPH_CAPTURE_H_

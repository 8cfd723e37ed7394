// The narrow interface Note [Graph replay] (server/graph_replay/
// replay_tracker.h) captures and replays a session's step through: a stream
// capture that ends in an executable graph, and the graph's launch.
//
// CUDA implements it with stream capture (cuda_graph_capture.cc); tests use
// FakeGraphCapture (fake_graph_capture.h), which counts what it was asked to
// do. Thread-compatible: one session's executor drives a capture and its
// graphs.
#ifndef TENSORD_RUNTIME_GRAPH_GRAPH_CAPTURE_H_
#define TENSORD_RUNTIME_GRAPH_GRAPH_CAPTURE_H_

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "runtime/core/strided.h"

namespace tensord {

// A captured step, ready to run again with one launch. Its kernels read and
// write the addresses they had while captured: whoever holds it keeps that
// memory alive (Note [Graph replay]).
class ExecutableGraph {
 public:
  virtual ~ExecutableGraph() = default;
  // Queues the whole graph on `stream` and returns without waiting.
  virtual absl::Status Launch(StreamHandle stream) = 0;
  // Kernels and copies in the graph (for stats and tests).
  virtual size_t num_nodes() const = 0;
};

// One capture in progress on one stream: work queued on the stream is
// recorded, not run, until End or Abort.
class StreamCapture {
 public:
  virtual ~StreamCapture() = default;  // aborts a capture not yet ended
  // Stops recording and instantiates what was recorded. The recorded work
  // has NOT run: launch the graph once to run it (an error here means the
  // capture was invalidated, e.g. by a synchronising call: the recorded work
  // is lost and the caller must not rely on it).
  virtual absl::StatusOr<std::unique_ptr<ExecutableGraph>> End() = 0;
};

// Makes captures; one per device kind that can capture (CUDA).
class GraphCaptureBackend {
 public:
  virtual ~GraphCaptureBackend() = default;
  // Starts recording the work later queued on `stream` by this thread.
  virtual absl::StatusOr<std::unique_ptr<StreamCapture>> Begin(
      StreamHandle stream) = 0;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_GRAPH_GRAPH_CAPTURE_H_

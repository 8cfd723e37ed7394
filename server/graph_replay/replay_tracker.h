// Note [Graph replay]
// ~~~~~~~~~~~~~~~~~~~
// A training loop sends the same commands every step: upload a batch, the
// forward ops, backward, the optimizer step, then read the loss. On a GPU
// each op costs the daemon a few microseconds of host time to launch; a
// CUDA graph replays a recorded step with one launch. tensord finds the
// repetition itself, so clients change nothing (`--cuda_graph_replay`).
//
// The step. A step ends at the client's read: a Get or a Sync (the read is
// the step's last command). A training loop reads once per step
// (`loss.item()`), a read is the only point where the client waits, and the
// data it reads must have been computed, so a capture has to end there
// anyway. Between reads we do not guess at repetitions inside a batch.
//
// Recognition. Each step's commands are canonicalised by StepSignature
// (step_signature.h): handles become roles (fresh in this step, made by the
// previous step, or fixed by id with their metadata), so two training steps
// compare equal although every activation has a new id. Steps with events,
// shared buffers or profiles, steps that consumed random numbers (a graph
// would replay the same ones), steps with an error and steps past the size
// caps are never candidates.
//
// States (ReplayTracker, below), per session:
//   eager      the last steps differ;
//   candidate  the last step repeated the one before (counting);
//   captured   `capture_after` equal steps were seen, the next one was
//              captured on the session's stream and its graph is held;
//   replaying  the last step matched a held graph and was replayed;
//   fallback   the last step was planned as a capture or replay but
//              differed (a new shape, another op, a read in the middle, an
//              error): it ran eagerly, with eager's results.
// A graph is dropped when a fixed handle it reads is released or its
// storage moved (its kernels hold the old addresses), when its step fails,
// when the session ends, and least-recently-used first past `max_graphs` or
// `max_graph_bytes` (the memory its step allocated, charged to the
// session's quota by the allocator as every allocation is).
//
// Memory (the capture pool). A graph's kernels write the addresses its
// captured step allocated; nothing else may be given those blocks while the
// graph lives. The design: capture on a stream of the session reserved for
// the graph, so the caching allocator's per-stream pools keep its blocks
// apart, and hold every storage the captured step allocated until the graph
// is dropped (CapturedMemory); those bytes stay charged to the session.
//
// What is built (see docs/runtime.md "Graph replay"): recognition, the state
// machine, invalidation and the bounds, driven by the real command path
// (CommandRunner feeds every command to StepReplay); the capture interface
// (runtime/graph) with CUDA's stream capture, which compiles here but has
// NOT RUN ON A GPU. Not built yet: running a planned capture or replay (the
// runner executes every step eagerly and only counts what it would have
// captured and replayed), so the flag changes no result.
#ifndef TENSORD_SERVER_GRAPH_REPLAY_REPLAY_TRACKER_H_
#define TENSORD_SERVER_GRAPH_REPLAY_REPLAY_TRACKER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/graph/graph_capture.h"
#include "server/graph_replay/step_signature.h"

namespace tensord {

struct ReplayConfig {
  int capture_after = 3;  // equal eager steps seen before capturing
  size_t max_graphs = 4;  // held per session
  int64_t max_graph_bytes = int64_t{1} << 30;  // their memory, per session
};

enum class ReplayState { kEager, kCandidate, kCaptured, kReplaying, kFallback };
const char* ReplayStateName(ReplayState state);

// What the step starting now should be.
enum class StepPlan { kEager, kCapture, kReplay };

struct ReplayStats {
  uint64_t steps = 0;
  uint64_t captures = 0;          // graphs kept
  uint64_t capture_failures = 0;  // planned captures that kept no graph
  uint64_t replays = 0;
  uint64_t fallbacks = 0;      // planned replays that ran eagerly
  uint64_t invalidations = 0;  // graphs dropped before the session's end
  size_t graphs = 0;
  int64_t graph_bytes = 0;
};

// How a step went, besides its commands.
struct StepFacts {
  bool error = false;     // a command of the step failed
  bool used_rng = false;  // it drew random numbers
};

// Thread-compatible: one session's executor.
class ReplayTracker {
 public:
  explicit ReplayTracker(ReplayConfig config) : config_(config) {}

  // The plan for the step that starts now. A held graph whose fixed
  // handles' storage moved (read through `meta`) is dropped first.
  StepPlan Plan(const HandleMetaSource& meta);
  // During a planned capture or replay: whether the step so far (`prefix`,
  // StepSignatureBuilder::bytes) is still a prefix of the expected one.
  bool StillMatches(absl::string_view prefix) const;
  // The graph a replay plan launches (null otherwise).
  ExecutableGraph* planned_graph() const;
  // Ends the step planned by the last Plan. A capture passes its graph
  // (null when the capture failed) and the bytes its step allocated.
  void EndStep(StepSignature signature, const StepFacts& facts,
               std::unique_ptr<ExecutableGraph> graph = nullptr,
               int64_t graph_bytes = 0);
  // Drops the graphs reading handle `id` as a fixed handle.
  void OnRelease(uint64_t id);
  // Drops everything (the session ends).
  void Clear();

  ReplayState state() const { return state_; }
  const ReplayStats& stats() const { return stats_; }

 private:
  struct Held {
    StepSignature signature;
    std::unique_ptr<ExecutableGraph> graph;
    int64_t bytes = 0;
    uint64_t last_used = 0;
  };

  Held* Find(const std::string& bytes);
  void Drop(size_t index, bool invalidation);
  // Makes room for `bytes` more (LRU); false when they never fit.
  bool MakeRoom(int64_t bytes);
  bool Repeatable(const StepSignature& s, const StepFacts& f) const;

  const ReplayConfig config_;
  ReplayState state_ = ReplayState::kEager;
  ReplayStats stats_;
  StepPlan plan_ = StepPlan::kEager;
  Held* planned_ = nullptr;  // the graph a replay plan expects
  StepSignature last_;       // the previous step's
  int repeats_ = 0;          // equal repeatable steps ending with last_
  std::string too_big_;      // a step whose graph never fits: not retried
  std::vector<std::unique_ptr<Held>> held_;
  uint64_t clock_ = 0;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_GRAPH_REPLAY_REPLAY_TRACKER_H_

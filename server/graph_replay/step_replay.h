// What CommandRunner calls for Note [Graph replay] (replay_tracker.h): it
// sees every command before it runs, cuts the stream into steps at reads
// (Get, Sync) and keeps the session's ReplayTracker.
//
// It begins a capture through `backend` when the tracker plans one and ends
// it at the read, and launches the held graph of a replayed step there.
// Today the runner passes a DryGraphCapture (runtime/graph): every step
// still runs eagerly, captures record nothing and launches do nothing, so
// the flag changes no result; the counts say what would have been captured
// and replayed (docs/runtime.md "Graph replay").
//
// Thread-compatible: the session's executor role.
#ifndef TENSORD_SERVER_GRAPH_REPLAY_STEP_REPLAY_H_
#define TENSORD_SERVER_GRAPH_REPLAY_STEP_REPLAY_H_

#include <cstdint>
#include <memory>

#include "proto/tensord.pb.h"
#include "server/graph_replay/handle_meta.h"
#include "server/graph_replay/replay_tracker.h"
#include "server/graph_replay/step_signature.h"

namespace tensord {

class StepReplay {
 public:
  // With a DryGraphCapture of its own: what the runner uses today.
  static std::unique_ptr<StepReplay> Dry(ReplayConfig config,
                                         const HandleTable* table);
  // `table` and `backend` must outlive this.
  StepReplay(ReplayConfig config, const HandleTable* table,
             GraphCaptureBackend* backend)
      : meta_(table), builder_(&meta_), tracker_(config), backend_(backend) {}

  // Before `cmd` runs; `rng_offset` is the session generator's offset then.
  void Observe(const v1::Command& cmd, uint64_t rng_offset);
  // A command of the current step failed.
  void NoteError() { facts_.error = true; }
  // Why the last capture or launch failed (OK when none did).
  const absl::Status& last_failure() const { return last_failure_; }
  // The session ends: graphs and history go.
  void Clear();

  ReplayState state() const { return tracker_.state(); }
  const ReplayStats& stats() const { return tracker_.stats(); }
  // The plan of the step in progress (kEager between steps).
  StepPlan plan() const { return in_step_ ? plan_ : StepPlan::kEager; }

 private:
  void BeginStep(uint64_t rng_offset);
  void EndStep(uint64_t rng_offset);

  HandleTableMeta meta_;
  StepSignatureBuilder builder_;
  ReplayTracker tracker_;
  std::unique_ptr<GraphCaptureBackend> owned_backend_;  // Dry's
  GraphCaptureBackend* backend_;
  std::unique_ptr<StreamCapture> capture_;  // during a capture plan
  absl::Status last_failure_;
  bool in_step_ = false;
  StepPlan plan_ = StepPlan::kEager;
  uint64_t step_rng_ = 0;  // the generator's offset when the step began
  StepFacts facts_;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_GRAPH_REPLAY_STEP_REPLAY_H_

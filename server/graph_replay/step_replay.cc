#include "server/graph_replay/step_replay.h"

#include <utility>

#include "proto/packed_commands.h"
#include "runtime/graph/dry_graph_capture.h"

namespace tensord {

std::unique_ptr<StepReplay> StepReplay::Dry(ReplayConfig config,
                                            const HandleTable* table) {
  auto backend = std::make_unique<DryGraphCapture>();
  auto replay = std::make_unique<StepReplay>(config, table, backend.get());
  replay->owned_backend_ = std::move(backend);
  return replay;
}

void StepReplay::BeginStep(uint64_t rng_offset) {
  in_step_ = true;
  plan_ = tracker_.Plan(meta_);
  step_rng_ = rng_offset;
  facts_ = StepFacts();
  if (plan_ == StepPlan::kCapture) {
    // The runner's stand-in capture needs no stream (step_replay.h).
    auto capture = backend_->Begin(nullptr);
    if (capture.ok()) {
      capture_ = *std::move(capture);
    } else {
      last_failure_ = capture.status();
    }
  }
}

void StepReplay::EndStep(uint64_t rng_offset) {
  facts_.used_rng = rng_offset != step_rng_;
  std::unique_ptr<ExecutableGraph> graph;
  if (capture_ != nullptr) {
    auto ended = capture_->End();
    capture_.reset();
    if (ended.ok()) {
      graph = *std::move(ended);
    } else {
      last_failure_ = ended.status();
    }
  }
  StepSignature signature = builder_.Finish();
  ExecutableGraph* planned = tracker_.planned_graph();
  tracker_.EndStep(std::move(signature), facts_, std::move(graph),
                   /*graph_bytes=*/0);
  // A replayed step is launched once the whole step matched: a prefix that
  // matched and then differed ran eagerly (Note [Graph replay]).
  if (plan_ == StepPlan::kReplay &&
      tracker_.state() == ReplayState::kReplaying) {
    absl::Status launched = planned->Launch(nullptr);
    if (!launched.ok()) last_failure_ = launched;
  }
  in_step_ = false;
}

void StepReplay::Observe(const v1::Command& cmd, uint64_t rng_offset) {
  if (!in_step_) BeginStep(rng_offset);
  builder_.Add(cmd);  // before it runs: the inputs' roles and metadata now
  if (cmd.has_release()) {
    for (uint64_t id : cmd.release().handles()) tracker_.OnRelease(id);
  } else if (cmd.has_packed()) {
    packed::Reader reader(cmd.packed().entries());
    packed::Entry entry;
    while (!reader.done() && reader.Next(&entry).ok()) {
      if (entry.kind != packed::Kind::kRelease) continue;
      for (uint64_t id : entry.handles) tracker_.OnRelease(id);
    }
  }
  // Note [Graph replay]: the client's read ends the step. The random
  // numbers the step drew are known by now: its last op ran before the read.
  if (cmd.has_get() || cmd.has_sync()) EndStep(rng_offset);
}

void StepReplay::Clear() {
  capture_.reset();
  tracker_.Clear();
  builder_.Finish();
  in_step_ = false;
}

}  // namespace tensord

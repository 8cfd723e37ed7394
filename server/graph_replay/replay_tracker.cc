#include "server/graph_replay/replay_tracker.h"

#include <utility>

namespace tensord {

const char* ReplayStateName(ReplayState state) {
  switch (state) {
    case ReplayState::kEager:
      return "eager";
    case ReplayState::kCandidate:
      return "candidate";
    case ReplayState::kCaptured:
      return "captured";
    case ReplayState::kReplaying:
      return "replaying";
    case ReplayState::kFallback:
      return "fallback";
  }
  return "?";
}

ReplayTracker::Held* ReplayTracker::Find(const std::string& bytes) {
  for (auto& h : held_) {
    if (h->signature.bytes == bytes) return h.get();
  }
  return nullptr;
}

void ReplayTracker::Drop(size_t index, bool invalidation) {
  if (planned_ == held_[index].get()) planned_ = nullptr;
  stats_.graph_bytes -= held_[index]->bytes;
  held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(index));
  stats_.graphs = held_.size();
  if (invalidation) ++stats_.invalidations;
}

bool ReplayTracker::MakeRoom(int64_t bytes) {
  if (bytes > config_.max_graph_bytes || config_.max_graphs == 0) return false;
  while (!held_.empty() &&
         (held_.size() >= config_.max_graphs ||
          stats_.graph_bytes + bytes > config_.max_graph_bytes)) {
    size_t lru = 0;
    for (size_t i = 1; i < held_.size(); ++i) {
      if (held_[i]->last_used < held_[lru]->last_used) lru = i;
    }
    Drop(lru, /*invalidation=*/false);  // evicted, not invalid
  }
  return true;
}

bool ReplayTracker::Repeatable(const StepSignature& s,
                               const StepFacts& f) const {
  return s.capturable && !f.error && !f.used_rng && s.commands > 0;
}

StepPlan ReplayTracker::Plan(const HandleMetaSource& meta) {
  planned_ = nullptr;
  plan_ = StepPlan::kEager;
  if (repeats_ == 0) return plan_;
  // The prediction: the next step is the last one again.
  if (Held* held = Find(last_.bytes)) {
    for (const FixedBinding& b : held->signature.fixed) {
      if (meta.StorageOf(b.id) != b.storage) {  // its kernels hold b.storage
        for (size_t i = 0; i < held_.size(); ++i) {
          if (held_[i].get() == held) Drop(i, /*invalidation=*/true);
        }
        return plan_;
      }
    }
    planned_ = held;
    held->last_used = ++clock_;
    return plan_ = StepPlan::kReplay;
  }
  if (repeats_ >= config_.capture_after && last_.bytes != too_big_) {
    plan_ = StepPlan::kCapture;
  }
  return plan_;
}

bool ReplayTracker::StillMatches(absl::string_view prefix) const {
  if (plan_ == StepPlan::kEager) return false;
  const std::string& expected = last_.bytes;
  return prefix.size() <= expected.size() &&
         absl::string_view(expected).substr(0, prefix.size()) == prefix;
}

ExecutableGraph* ReplayTracker::planned_graph() const {
  return planned_ == nullptr ? nullptr : planned_->graph.get();
}

void ReplayTracker::EndStep(StepSignature signature, const StepFacts& facts,
                            std::unique_ptr<ExecutableGraph> graph,
                            int64_t graph_bytes) {
  ++stats_.steps;
  const bool repeatable = Repeatable(signature, facts);
  const bool matched = repeatable && signature.bytes == last_.bytes;
  switch (plan_) {
    case StepPlan::kReplay:
      if (matched && planned_ != nullptr) {
        ++stats_.replays;
        state_ = ReplayState::kReplaying;
      } else {
        ++stats_.fallbacks;
        state_ = ReplayState::kFallback;
        if (facts.error) {  // the graph's step fails: never replay it
          for (size_t i = 0; i < held_.size(); ++i) {
            if (held_[i].get() == planned_) {
              Drop(i, /*invalidation=*/true);
              break;
            }
          }
        }
      }
      break;
    case StepPlan::kCapture:
      if (matched && graph != nullptr && MakeRoom(graph_bytes)) {
        auto held = std::make_unique<Held>();
        held->signature = signature;
        held->graph = std::move(graph);
        held->bytes = graph_bytes;
        held->last_used = ++clock_;
        held_.push_back(std::move(held));
        stats_.graphs = held_.size();
        stats_.graph_bytes += graph_bytes;
        ++stats_.captures;
        state_ = ReplayState::kCaptured;
      } else {
        if (matched && graph != nullptr) too_big_ = signature.bytes;
        ++stats_.capture_failures;
        state_ = ReplayState::kFallback;
      }
      break;
    case StepPlan::kEager:
      break;
  }
  repeats_ = !repeatable ? 0 : matched ? repeats_ + 1 : 1;
  if (plan_ == StepPlan::kEager) {
    state_ = repeats_ >= 2 ? ReplayState::kCandidate : ReplayState::kEager;
  }
  last_ = std::move(signature);
  plan_ = StepPlan::kEager;
  planned_ = nullptr;
}

void ReplayTracker::OnRelease(uint64_t id) {
  for (size_t i = held_.size(); i-- > 0;) {
    for (const FixedBinding& b : held_[i]->signature.fixed) {
      if (b.id == id) {
        Drop(i, /*invalidation=*/true);
        break;
      }
    }
  }
}

void ReplayTracker::Clear() {
  held_.clear();
  planned_ = nullptr;
  stats_.graphs = 0;
  stats_.graph_bytes = 0;
  last_ = StepSignature();
  repeats_ = 0;
  state_ = ReplayState::kEager;
}

}  // namespace tensord

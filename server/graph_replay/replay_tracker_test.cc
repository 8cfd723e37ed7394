#include "server/graph_replay/replay_tracker.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"
#include "runtime/graph/dry_graph_capture.h"

namespace tensord {
namespace {

class Storages : public HandleMetaSource {
 public:
  void AppendMeta(uint64_t, std::string*) const override {}
  const void* StorageOf(uint64_t id) const override {
    auto it = at.find(id);
    return it == at.end() ? nullptr : it->second;
  }
  absl::flat_hash_map<uint64_t, const void*> at;
};

int kParam = 0, kMoved = 0;

StepSignature Sig(const std::string& bytes, uint64_t fixed_id = 1) {
  StepSignature s;
  s.bytes = bytes;
  s.commands = 3;
  s.fixed.push_back({fixed_id, &kParam});
  return s;
}

class ReplayTrackerTest : public ::testing::Test {
 protected:
  ReplayTrackerTest() { storages_.at[1] = &kParam; }

  // Runs one step the way StepReplay does; returns its plan.
  StepPlan Step(const std::string& bytes, StepFacts facts = {},
                int64_t graph_bytes = 100) {
    const StepPlan plan = tracker_.Plan(storages_);
    std::unique_ptr<ExecutableGraph> graph;
    if (plan == StepPlan::kCapture) {
      auto capture = backend_.Begin(nullptr);
      graph = *(*capture)->End();
    }
    ExecutableGraph* planned = tracker_.planned_graph();
    EXPECT_EQ(planned != nullptr, plan == StepPlan::kReplay);
    tracker_.EndStep(Sig(bytes), facts, std::move(graph), graph_bytes);
    if (tracker_.state() == ReplayState::kReplaying) {  // as StepReplay
      EXPECT_TRUE(planned->Launch(nullptr).ok());
    }
    return plan;
  }

  ReplayConfig config_;
  Storages storages_;
  DryGraphCapture backend_;
  ReplayTracker tracker_{config_};
};

TEST_F(ReplayTrackerTest, EagerCandidateCapturedReplaying) {
  EXPECT_EQ(Step("A"), StepPlan::kEager);
  EXPECT_EQ(tracker_.state(), ReplayState::kEager);
  EXPECT_EQ(Step("A"), StepPlan::kEager);
  EXPECT_EQ(tracker_.state(), ReplayState::kCandidate);
  EXPECT_EQ(Step("A"), StepPlan::kEager);  // third equal step seen
  EXPECT_EQ(Step("A"), StepPlan::kCapture);
  EXPECT_EQ(tracker_.state(), ReplayState::kCaptured);
  EXPECT_EQ(tracker_.stats().captures, 1u);
  EXPECT_EQ(tracker_.stats().graph_bytes, 100);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Step("A"), StepPlan::kReplay);
  EXPECT_EQ(tracker_.state(), ReplayState::kReplaying);
  EXPECT_EQ(tracker_.stats().replays, 5u);
  EXPECT_EQ(backend_.counts().launches, 5);
  EXPECT_EQ(tracker_.stats().steps, 9u);
}

TEST_F(ReplayTrackerTest, ADifferentStepFallsBackAndKeepsTheGraph) {
  for (int i = 0; i < 4; ++i) Step("A");
  ASSERT_EQ(tracker_.stats().captures, 1u);
  EXPECT_EQ(Step("B"), StepPlan::kReplay);  // planned, then differed
  EXPECT_EQ(tracker_.state(), ReplayState::kFallback);
  EXPECT_EQ(tracker_.stats().fallbacks, 1u);
  EXPECT_EQ(backend_.counts().launches, 0);
  EXPECT_EQ(backend_.counts().live_graphs, 1);
  // An evaluation step between training steps: back to A, which is seen
  // once, then replayed from the graph still held.
  EXPECT_EQ(Step("A"), StepPlan::kEager);
  EXPECT_EQ(Step("A"), StepPlan::kReplay);
  EXPECT_EQ(tracker_.stats().captures, 1u);
}

TEST_F(ReplayTrackerTest, AnErrorDropsTheGraphAndResetsTheCount) {
  for (int i = 0; i < 4; ++i) Step("A");
  EXPECT_EQ(Step("A", StepFacts{.error = true}), StepPlan::kReplay);
  EXPECT_EQ(tracker_.state(), ReplayState::kFallback);
  EXPECT_EQ(backend_.counts().live_graphs, 0);
  EXPECT_EQ(tracker_.stats().invalidations, 1u);
  EXPECT_EQ(Step("A"), StepPlan::kEager);  // counting from one again
  EXPECT_EQ(Step("A"), StepPlan::kEager);
  EXPECT_EQ(Step("A"), StepPlan::kEager);
  EXPECT_EQ(Step("A"), StepPlan::kCapture);
}

TEST_F(ReplayTrackerTest, RandomStepsAreNeverCaptured) {
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(Step("A", StepFacts{.used_rng = true}), StepPlan::kEager);
  }
  EXPECT_EQ(backend_.counts().begun, 0);
}

TEST_F(ReplayTrackerTest, ReleasingOrMovingAFixedHandleInvalidates) {
  for (int i = 0; i < 4; ++i) Step("A");
  tracker_.OnRelease(2);  // not read by the graph
  EXPECT_EQ(tracker_.stats().graphs, 1u);
  tracker_.OnRelease(1);
  EXPECT_EQ(tracker_.stats().graphs, 0u);
  EXPECT_EQ(backend_.counts().live_graphs, 0);
  EXPECT_EQ(tracker_.stats().invalidations, 1u);

  Step("A");  // recaptured: the count went on
  ASSERT_EQ(tracker_.stats().graphs, 1u);
  storages_.at[1] = &kMoved;  // e.g. a .grad replaced under the same id
  EXPECT_EQ(Step("A"), StepPlan::kEager);
  EXPECT_EQ(tracker_.stats().invalidations, 2u);
  EXPECT_EQ(backend_.counts().live_graphs, 0);
}

TEST_F(ReplayTrackerTest, BoundsEvictLeastRecentlyUsed) {
  ReplayConfig small;
  small.max_graphs = 2;
  small.max_graph_bytes = 250;
  ReplayTracker tracker(small);
  auto run = [&](const std::string& s, int64_t bytes) {
    const StepPlan plan = tracker.Plan(storages_);
    std::unique_ptr<ExecutableGraph> graph;
    if (plan == StepPlan::kCapture) graph = *(*backend_.Begin(nullptr))->End();
    tracker.EndStep(Sig(s), {}, std::move(graph), bytes);
  };
  for (int i = 0; i < 4; ++i) run("A", 100);
  for (int i = 0; i < 4; ++i) run("B", 100);
  EXPECT_EQ(tracker.stats().graphs, 2u);
  EXPECT_EQ(tracker.stats().graph_bytes, 200);
  for (int i = 0; i < 4; ++i) run("C", 100);  // evicts A (least recent)
  EXPECT_EQ(tracker.stats().graphs, 2u);
  EXPECT_EQ(tracker.stats().graph_bytes, 200);
  EXPECT_EQ(backend_.counts().live_graphs, 2);
  EXPECT_EQ(tracker.stats().invalidations, 0u);  // evicted, not invalid
  // A step whose graph alone is over the bytes bound is not kept, and not
  // captured again and again.
  for (int i = 0; i < 4; ++i) run("D", 300);
  EXPECT_EQ(tracker.stats().capture_failures, 1u);
  run("D", 300);
  run("D", 300);
  EXPECT_EQ(tracker.stats().capture_failures, 1u);
  EXPECT_EQ(tracker.stats().graphs, 2u);
  tracker.Clear();
  EXPECT_EQ(backend_.counts().live_graphs, 0);
  EXPECT_EQ(tracker.stats().graph_bytes, 0);
}

TEST_F(ReplayTrackerTest, AFailedCaptureKeepsNoGraph) {
  for (int i = 0; i < 3; ++i) Step("A");
  ASSERT_EQ(tracker_.Plan(storages_), StepPlan::kCapture);
  backend_.FailNextCapture(absl::InternalError("capture invalidated"));
  auto capture = backend_.Begin(nullptr);
  auto graph = (*capture)->End();
  EXPECT_FALSE(graph.ok());
  tracker_.EndStep(Sig("A"), {}, nullptr, 0);
  EXPECT_EQ(tracker_.state(), ReplayState::kFallback);
  EXPECT_EQ(tracker_.stats().capture_failures, 1u);
  EXPECT_EQ(tracker_.Plan(storages_), StepPlan::kCapture);  // tried again
}

TEST_F(ReplayTrackerTest, StillMatchesChecksThePrefix) {
  for (int i = 0; i < 4; ++i) Step("ABCD");
  ASSERT_EQ(tracker_.Plan(storages_), StepPlan::kReplay);
  EXPECT_TRUE(tracker_.StillMatches(""));
  EXPECT_TRUE(tracker_.StillMatches("AB"));
  EXPECT_TRUE(tracker_.StillMatches("ABCD"));
  EXPECT_FALSE(tracker_.StillMatches("ABX"));
  EXPECT_FALSE(tracker_.StillMatches("ABCDE"));
}

}  // namespace
}  // namespace tensord

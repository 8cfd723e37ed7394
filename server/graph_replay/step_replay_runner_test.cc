// Note [Graph replay] through the real command path: a CommandRunner with
// RunnerConfig::graph_replay runs training-like steps on the CPU (every
// step eagerly; the dry capture backend), and its StepReplay recognises
// them across fresh handle ids, plans captures and replays, and falls back
// when a step differs.
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "server/command_runner.h"
#include "server/session_test_fixture.h"

namespace tensord {
namespace {

using testing_util::OpId;
using testing_util::RecordingSink;

class StepReplayRunnerTest : public ::testing::Test {
 protected:
  StepReplayRunnerTest()
      : devices_(DeviceRegistry::Create()),
        runner_(MakeConfig(devices_.get()), &sink_) {
    // w = full([4, 4], 0.5): the long-lived parameter, handle 1.
    v1::Batch b;
    v1::Call* call = Add(&b)->mutable_call();
    call->set_op_id(OpId("full"));
    for (int64_t s : {4, 4}) {
      (*call->mutable_attrs())["shape"].mutable_ints()->add_values(s);
    }
    (*call->mutable_attrs())["fill_value"].set_f(0.5);
    call->add_outputs(1);
    Add(&b)->mutable_sync()->set_request_id(++request_);  // ends a step
    runner_.RunBatch(b);
    next_ = 10;
  }
  static RunnerConfig MakeConfig(DeviceRegistry* devices) {
    RunnerConfig config;
    config.session = 1;
    config.devices = devices;
    config.graph_replay = true;
    return config;
  }
  v1::Command* Add(v1::Batch* b) {
    v1::Command* c = b->add_commands();
    c->set_seq(++seq_);
    return c;
  }
  // One step: x = put(rows x 4 of `value`); y = matmul(x, w); l = sum(y);
  // w -= 0.01 * ... (an in-place update of the parameter); release last
  // step's handles; read l. Returns l.
  float Step(int64_t rows = 2, float value = 1.0f, const char* op = "mm") {
    const uint64_t x = next_, y = next_ + 1, l = next_ + 2;
    next_ += 10;
    v1::Batch b;
    v1::Put* put = Add(&b)->mutable_put();
    put->set_handle(x);
    put->set_dtype(v1::FLOAT32);
    put->add_shape(rows);
    put->add_shape(4);
    std::vector<float> data(static_cast<size_t>(rows) * 4, value);
    put->mutable_payload()->set_data(
        std::string(reinterpret_cast<const char*>(data.data()),
                    data.size() * sizeof(float)));
    put->set_last(true);
    v1::Call* mm = Add(&b)->mutable_call();
    mm->set_op_id(OpId(op));
    mm->add_inputs(x);
    mm->add_inputs(1);
    mm->add_outputs(y);
    v1::Call* sum = Add(&b)->mutable_call();
    sum->set_op_id(OpId("sum"));
    sum->add_inputs(y);
    sum->add_outputs(l);
    if (last_ != 0) {
      v1::Release* r = Add(&b)->mutable_release();
      for (uint64_t id : {last_, last_ + 1, last_ + 2}) r->add_handles(id);
    }
    last_ = x;
    v1::Get* get = Add(&b)->mutable_get();
    get->set_handle(l);
    get->set_request_id(++request_);
    const size_t frames = sink_.frames().size();
    runner_.RunBatch(b);
    const std::vector<v1::ServerFrame> all = sink_.frames();  // a copy
    for (size_t i = frames; i < all.size(); ++i) {
      const v1::ServerFrame& f = all[i];
      if (f.has_error() && f.error().request_id() == request_) return -1;
      if (f.has_data() && f.data().request_id() == request_) {
        float out = 0;
        std::memcpy(&out, f.data().payload().data().data(), sizeof(out));
        return out;
      }
    }
    std::string seen;
    for (size_t i = frames; i < all.size(); ++i) {
      seen += all[i].ShortDebugString() + "\n";
    }
    ADD_FAILURE() << "no data for request " << request_ << "; frames:\n"
                  << seen;
    return 0;
  }
  const StepReplay& replay() { return *runner_.graph_replay(); }

  std::unique_ptr<DeviceRegistry> devices_;
  RecordingSink sink_;
  CommandRunner runner_;
  uint64_t seq_ = 0, request_ = 0, next_ = 0, last_ = 0;
};

TEST_F(StepReplayRunnerTest, RepeatedStepsAreCapturedThenReplayed) {
  // sum(x @ w) with x all ones [2, 4] and w all 0.5 [4, 4]: 2*4*4*0.5 = 16.
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(Step(), 16.0f);
  // Step 1 reads w as made by the step before (the setup) and releases
  // nothing; from step 2 on w is fixed: steps 2, 3, 4 are equal, the fifth
  // is captured and the sixth to eighth replayed (counted: dry backend).
  EXPECT_EQ(replay().stats().steps, 9u);  // and the setup
  EXPECT_EQ(replay().stats().captures, 1u);
  EXPECT_EQ(replay().stats().replays, 3u);
  EXPECT_EQ(replay().state(), ReplayState::kReplaying);
}

TEST_F(StepReplayRunnerTest, NewShapeOrOpFallsBackWithEagerResults) {
  for (int i = 0; i < 6; ++i) Step();
  ASSERT_EQ(replay().stats().replays, 1u);
  EXPECT_FLOAT_EQ(Step(/*rows=*/3), 24.0f);  // a new batch size
  EXPECT_EQ(replay().state(), ReplayState::kFallback);
  EXPECT_EQ(replay().stats().fallbacks, 1u);
  // Data is not part of the step: other values still match the graph. The
  // next step releases the odd step's [3, 4] handles, so it differs too;
  // the one after is predicted from an ordinary step again and replayed.
  EXPECT_FLOAT_EQ(Step(2, 2.0f), 32.0f);
  EXPECT_FLOAT_EQ(Step(2, 3.0f), 48.0f);
  EXPECT_EQ(replay().state(), ReplayState::kEager);
  EXPECT_FLOAT_EQ(Step(2, 4.0f), 64.0f);
  EXPECT_EQ(replay().state(), ReplayState::kReplaying);
  EXPECT_FLOAT_EQ(Step(2, 1.0f, "matmul"), 16.0f);  // another op
  EXPECT_EQ(replay().state(), ReplayState::kFallback);
}

TEST_F(StepReplayRunnerTest, ReleasingAFixedInputDropsTheGraph) {
  for (int i = 0; i < 5; ++i) Step();
  ASSERT_EQ(replay().stats().graphs, 1u);
  v1::Batch b;
  Add(&b)->mutable_release()->add_handles(1);
  runner_.RunBatch(b);
  EXPECT_EQ(replay().stats().graphs, 0u);
  EXPECT_EQ(replay().stats().invalidations, 1u);
}

TEST_F(StepReplayRunnerTest, AFailingStepIsNotACandidate) {
  for (int i = 0; i < 5; ++i) Step();
  ASSERT_EQ(replay().stats().graphs, 1u);
  // The parameter released: the step's matmul fails (NOT_FOUND) and poisons
  // its outputs; the read reports it. The graph went with the release.
  v1::Batch b;
  Add(&b)->mutable_release()->add_handles(1);
  runner_.RunBatch(b);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Step(), -1.0f);  // the read fails
  EXPECT_EQ(replay().stats().captures, 1u);              // never again
  EXPECT_EQ(replay().state(), ReplayState::kEager);
}

TEST_F(StepReplayRunnerTest, SessionEndClearsIt) {
  for (int i = 0; i < 5; ++i) Step();
  ASSERT_EQ(replay().stats().graphs, 1u);
  runner_.ReleaseAll();
  EXPECT_EQ(replay().stats().graphs, 0u);
  EXPECT_EQ(replay().stats().graph_bytes, 0);
}

}  // namespace
}  // namespace tensord

// Note [Packed commands] (server/command_packed.cc): a packed run's entries
// run as the Calls and Releases they stand for; malformed runs are frame
// errors that name the run, the entry and the byte, and the session goes on.
#include "proto/packed_commands.h"

#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/session_test_fixture.h"

namespace tensord {
namespace {

using ::testing::HasSubstr;
using testing_util::OpId;
using testing_util::SessionTest;

class PackedCommandsTest : public SessionTest {
 protected:
  PackedCommandsTest() = default;
  explicit PackedCommandsTest(v1::Hello hello)
      : SessionTest(std::move(hello)) {}
  // Starts a packed run of `count` commands at the next seqs.
  v1::Packed* Run(v1::Batch* b, uint32_t count) {
    v1::Command* c = Add(b);
    seq_ += count - 1;
    v1::Packed* run = c->mutable_packed();
    run->set_count(count);
    return run;
  }
  static void Call(v1::Packed* run, const std::string& op,
                   std::vector<uint64_t> inputs, uint64_t out) {
    packed::AppendCall(OpId(op), 0, inputs, std::vector<uint64_t>{out},
                       run->mutable_entries());
  }
  // The two tensors the tests start from: 1 = [2, 2, 2], 2 = [5, 5, 5].
  void Inputs() {
    v1::Batch b;
    Full(&b, 1, {3}, 2.0);
    Full(&b, 2, {3}, 5.0);
    session_->Submit(b);
  }
  v1::ServerFrame AckOf(uint64_t last_seq) {
    return sink_->WaitFor([last_seq](const v1::ServerFrame& f) {
      return f.has_ack() && f.ack().last_seq() == last_seq;
    });
  }
  std::vector<std::string> FrameErrors() {
    std::vector<std::string> out;
    for (const v1::ServerFrame& f : sink_->frames()) {
      if (f.has_error() && f.error().request_id() == 0) {
        out.push_back(f.error().status().message());
      }
    }
    return out;
  }
};

TEST_F(PackedCommandsTest, EntriesRunAsTheCommandsTheyStandFor) {
  Inputs();
  v1::Batch b;
  v1::Packed* run = Run(&b, 4);
  const uint64_t first = seq_ - 3;
  Call(run, "add", {1, 2}, 3);  // [7, 7, 7]
  Call(run, "mul", {3, 2}, 4);  // [35, 35, 35]
  packed::AppendRelease(std::vector<uint64_t>{3}, run->mutable_entries());
  Call(run, "sub", {4, 1}, 5);  // [33, 33, 33]
  session_->Submit(b);
  const v1::Ack ack = AckOf(first + 3).ack();
  ASSERT_EQ(ack.created_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ack.created(i).handle(), 3u + i);
    EXPECT_EQ(ack.created(i).dtype(), v1::FLOAT32);
    ASSERT_EQ(ack.created(i).shape_size(), 1);
    EXPECT_EQ(ack.created(i).shape(0), 3);
    EXPECT_EQ(ack.created(i).device(), "cpu");
  }
  EXPECT_EQ(GetFloats(5), (std::vector<float>{33, 33, 33}));
  EXPECT_EQ(GetFloats(4), (std::vector<float>{35, 35, 35}));
  // The Release entry ran: handle 3 is gone.
  EXPECT_TRUE(GetFloats(3).empty());
  EXPECT_THAT(last_error_.message(), HasSubstr("3"));
  EXPECT_TRUE(FrameErrors().empty());
}

TEST_F(PackedCommandsTest, AnOpErrorPoisonsTheEntrysOutputAsForAMessage) {
  Inputs();
  v1::Batch b;
  v1::Packed* run = Run(&b, 2);
  Call(run, "add", {1, 99}, 3);  // 99: no such handle
  Call(run, "add", {3, 1}, 4);   // poisoned by the same error
  session_->Submit(b);
  const v1::Ack ack = AckOf(seq_).ack();
  ASSERT_EQ(ack.created_size(), 2);
  EXPECT_THAT(ack.created(0).error().message(), HasSubstr("99"));
  EXPECT_EQ(ack.created(1).error().message(), ack.created(0).error().message());
  EXPECT_TRUE(FrameErrors().empty());
}

TEST_F(PackedCommandsTest, AMalformedEntryIsAFrameErrorAndTheSessionGoesOn) {
  Inputs();
  v1::Batch b;
  v1::Packed* run = Run(&b, 3);
  const uint64_t first = seq_ - 2;
  Call(run, "add", {1, 2}, 3);
  const size_t good = run->entries().size();
  // A Call whose op id varint is cut short.
  run->mutable_entries()->append("\x01\x85", 2);
  session_->Submit(b);
  AckOf(seq_);
  const std::vector<std::string> errors = FrameErrors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0],
              HasSubstr(absl::StrCat("packed commands at seq ", first,
                                     " (3 commands, ", good + 2, " bytes)")));
  EXPECT_THAT(errors[0],
              HasSubstr(absl::StrCat("entry 1 (seq ", first + 1,
                                     "): bad op_id at byte ", good + 1)));
  // The entry before it ran; the session still takes commands.
  EXPECT_EQ(GetFloats(3), (std::vector<float>{7, 7, 7}));
  v1::Batch next;
  Binary(&next, "add", 3, 3, 4);
  session_->Submit(next);
  EXPECT_EQ(GetFloats(4), (std::vector<float>{14, 14, 14}));
}

TEST_F(PackedCommandsTest, ARunMustHoldExactlyItsCount) {
  Inputs();
  {
    v1::Batch b;
    v1::Packed* run = Run(&b, 1);
    Call(run, "add", {1, 2}, 3);
    Call(run, "add", {1, 2}, 4);  // one more than its count
    session_->Submit(b);
  }
  {
    v1::Batch b;
    v1::Packed* run = Run(&b, 3);
    Call(run, "add", {1, 2}, 5);  // one short
    session_->Submit(b);
  }
  {
    v1::Batch b;
    Add(&b)->mutable_packed();  // count 0
    session_->Submit(b);
  }
  AckOf(seq_);
  const std::vector<std::string> errors = FrameErrors();
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_THAT(errors[0], HasSubstr("entry 1 at byte"));
  EXPECT_THAT(errors[0], HasSubstr("is past its count"));
  EXPECT_THAT(errors[1], HasSubstr("its entries stand for 1 commands"));
  EXPECT_THAT(errors[2], HasSubstr("must stand for at least one command"));
  // The entries within the counts ran.
  EXPECT_EQ(GetFloats(3), (std::vector<float>{7, 7, 7}));
  EXPECT_EQ(GetFloats(5), (std::vector<float>{7, 7, 7}));
}

TEST_F(PackedCommandsTest, AResentRunSkipsTheEntriesAlreadyApplied) {
  Inputs();  // seqs 1, 2
  {
    v1::Batch b;
    v1::Packed* run = Run(&b, 2);  // seqs 3, 4
    Call(run, "add", {1, 2}, 3);
    Call(run, "mul", {1, 2}, 4);
    session_->Submit(b);
    AckOf(4);
  }
  // A resume resends the run with one more entry (as a client whose batch
  // grew after the first send never does, but a straddling run may come).
  v1::Batch b;
  v1::Command* c = b.add_commands();
  c->set_seq(3);
  v1::Packed* run = c->mutable_packed();
  run->set_count(3);  // seqs 3, 4, 5
  Call(run, "add", {1, 2}, 3);
  Call(run, "mul", {1, 2}, 4);
  Call(run, "sub", {1, 2}, 5);
  seq_ = 5;
  session_->Submit(b);
  const v1::Ack ack = AckOf(5).ack();
  // Re-running 3 and 4 would have reused their handles: a frame error.
  ASSERT_EQ(ack.created_size(), 1);
  EXPECT_EQ(ack.created(0).handle(), 5u);
  EXPECT_TRUE(FrameErrors().empty());
  EXPECT_EQ(GetFloats(5), (std::vector<float>{-3, -3, -3}));
  EXPECT_EQ(GetFloats(4), (std::vector<float>{10, 10, 10}));
}

TEST_F(PackedCommandsTest, ACheapRunWithAnItemRunsInline) {
  Inputs();
  session_->WaitUntilIdle();
  v1::Batch b;
  Call(Run(&b, 1), "add", {1, 2}, 3);
  v1::Get* get = Add(&b)->mutable_get();
  get->set_handle(3);
  get->set_request_id(++request_);
  const uint64_t rid = request_;
  session_->Submit(b, /*may_run_inline=*/true);
  auto [data, sender] = sink_->WaitForWithSender([rid](const auto& f) {
    return f.has_data() && f.data().request_id() == rid;
  });
  EXPECT_EQ(sender, std::this_thread::get_id());
  EXPECT_EQ(data.data().payload().data().size(), 3 * sizeof(float));
}

TEST_F(PackedCommandsTest, TheProfilerRecordsEachEntry) {
  Inputs();
  session_->WaitUntilIdle();
  session_->profiler().SetEnabled(true);
  v1::Batch b;
  v1::Packed* run = Run(&b, 3);
  Call(run, "add", {1, 2}, 3);
  packed::AppendRelease(std::vector<uint64_t>{3}, run->mutable_entries());
  Call(run, "mul", {1, 2}, 4);
  session_->Submit(b);
  session_->WaitUntilIdle();
  v1::Profile profile;
  session_->profiler().Fill(/*clear=*/true, &profile);
  ASSERT_EQ(profile.ops_size(), 2);
  EXPECT_EQ(profile.ops(0).op(), "add");
  EXPECT_EQ(profile.ops(1).op(), "mul");
  EXPECT_EQ(profile.ops(1).bytes_allocated(), 3 * sizeof(float));
  session_->profiler().SetEnabled(false);
}

// Note [Packed metas]: to a client that asked (Hello.packed_acks), plain
// results come as packed entries; poisoned ones, None and results with a
// grad_fn stay TensorMeta messages.
class PackedAcksTest : public PackedCommandsTest {
 protected:
  static v1::Hello AskingHello() {
    v1::Hello hello;
    hello.set_packed_acks(true);
    return hello;
  }
  PackedAcksTest() : PackedCommandsTest(AskingHello()) {}
};

TEST_F(PackedAcksTest, PlainResultsComePackedTheRestAsMessages) {
  Inputs();
  v1::Batch b;
  v1::Command* grad = Add(&b);
  grad->mutable_set_requires_grad()->set_handle(1);
  grad->mutable_set_requires_grad()->set_requires_grad(true);
  v1::Packed* run = Run(&b, 3);
  Call(run, "add", {2, 2}, 3);   // plain: packed
  Call(run, "add", {1, 99}, 4);  // poisoned: a message with its error
  Call(run, "mul", {1, 2}, 5);   // has a grad_fn: a message
  v1::Call* sum = Add(&b)->mutable_call();
  sum->set_op_id(OpId("sum"));
  (*sum->mutable_attrs())["dim"].mutable_ints()->add_values(0);
  sum->add_inputs(3);
  sum->add_outputs(6);  // plain, from a Call message: packed too
  session_->Submit(b);
  const v1::Ack ack = AckOf(seq_).ack();
  ASSERT_EQ(ack.created_size(), 2);
  EXPECT_EQ(ack.created(0).handle(), 4u);
  EXPECT_THAT(ack.created(0).error().message(), HasSubstr("99"));
  EXPECT_EQ(ack.created(1).handle(), 5u);
  EXPECT_EQ(ack.created(1).grad_fn(), "MulBackward0");
  packed::Reader metas(ack.packed_created());
  packed::Meta m;
  ASSERT_TRUE(metas.NextMeta(&m).ok());
  EXPECT_EQ(m.handle, 3u);
  EXPECT_EQ(m.dtype, static_cast<uint32_t>(v1::FLOAT32));
  EXPECT_EQ(m.flags, packed::kIsLeaf);  // no grad: a leaf
  EXPECT_EQ(std::vector<int64_t>(m.shape.begin(), m.shape.end()),
            std::vector<int64_t>{3});
  // Welcome.devices lists the devices in the registry's order.
  EXPECT_EQ(devices_->devices()[m.device]->name(), "cpu");
  ASSERT_TRUE(metas.NextMeta(&m).ok());
  EXPECT_EQ(m.handle, 6u);
  EXPECT_TRUE(m.shape.empty());  // a 0-dim sum
  EXPECT_TRUE(metas.done());
  EXPECT_EQ(GetFloats(6), std::vector<float>{30});
}

TEST_F(PackedAcksTest, ALeafThatRequiresGradSaysSo) {
  v1::Batch b;
  v1::Put* put = Add(&b)->mutable_put();
  put->set_handle(1);
  put->set_dtype(v1::FLOAT32);
  put->add_shape(2);
  const float values[2] = {1.5f, -2.0f};
  put->mutable_payload()->set_data(values, sizeof(values));
  put->set_last(true);
  put->set_requires_grad(true);
  Call(Run(&b, 1), "detach", {1}, 2);
  session_->Submit(b);
  const v1::ServerFrame ack = AckOf(seq_);  // the Reader keeps a view
  packed::Reader metas(ack.ack().packed_created());
  packed::Meta m;
  ASSERT_TRUE(metas.NextMeta(&m).ok());
  EXPECT_EQ(m.handle, 1u);
  EXPECT_EQ(m.flags, packed::kRequiresGrad | packed::kIsLeaf);
  ASSERT_TRUE(metas.NextMeta(&m).ok());
  EXPECT_EQ(m.handle, 2u);
  EXPECT_EQ(m.flags, packed::kIsLeaf);  // detached
  EXPECT_EQ(GetFloats(2), (std::vector<float>{1.5f, -2.0f}));
}

}  // namespace
}  // namespace tensord

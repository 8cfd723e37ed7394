// Note [Inline batches] (server/command_inline.cc): a cheap batch with a sync
// point that reaches an idle session runs on the submitting thread; every
// other batch runs on the executor, in order. Which thread sent a reply tells
// which path ran the batch; the values are checked either way.
#include <thread>

#include "gtest/gtest.h"
#include "server/session_test_fixture.h"

namespace tensord {
namespace {

using testing_util::OpId;
using testing_util::SessionTest;

class InlineBatchTest : public SessionTest {
 protected:
  // Submits `b` as the gRPC transport does. Not on an arena as the
  // transport's are: in the TSan build a Call with attributes on an arena
  // crashes in the uninstrumented libprotobuf (docs/reliability.md); the
  // inline path is the same for both overloads.
  void SubmitLikeTransport(const v1::Batch& b, bool may_run_inline = true) {
    session_->Submit(b, may_run_inline);
  }
  // Adds a Get of `handle`; returns its request id.
  uint64_t AddGet(v1::Batch* b, uint64_t handle) {
    v1::Get* get = Add(b)->mutable_get();
    get->set_handle(handle);
    get->set_request_id(++request_);
    return request_;
  }
  // The first Data frame of request `rid` and the thread that sent it.
  std::pair<v1::ServerFrame, std::thread::id> DataOf(uint64_t rid) {
    return sink_->WaitForWithSender([rid](const v1::ServerFrame& f) {
      return f.has_data() && f.data().request_id() == rid;
    });
  }
  static float FirstFloat(const v1::ServerFrame& f) {
    float v = 0;
    EXPECT_GE(f.data().payload().data().size(), sizeof(v));
    std::memcpy(&v, f.data().payload().data().data(), sizeof(v));
    return v;
  }
  // Creates handle `id` = full(shape, value) and waits until it ran.
  void Ready(uint64_t id, std::vector<int64_t> shape, double value) {
    v1::Batch b;
    Full(&b, id, std::move(shape), value);
    session_->Submit(b);
    session_->WaitUntilIdle();
  }
  // Submits {out = op(x, x); Get out}: the value's first element and the
  // thread that sent it.
  std::pair<float, std::thread::id> OpItem(const std::string& op, uint64_t x,
                                           uint64_t out,
                                           bool may_run_inline = true) {
    v1::Batch b;
    Binary(&b, op, x, x, out);
    const uint64_t rid = AddGet(&b, out);
    SubmitLikeTransport(b, may_run_inline);
    auto [data, sender] = DataOf(rid);
    return {FirstFloat(data), sender};
  }
};

TEST_F(InlineBatchTest, ASmallItemRunsOnTheSubmittingThread) {
  Ready(1, {1}, 2.0);
  auto [value, sender] = OpItem("add", 1, 2);
  EXPECT_EQ(sender, std::this_thread::get_id());
  EXPECT_EQ(value, 4.0f);
  // Its Ack follows from the same thread, with the new handle's metadata.
  auto [ack, ack_sender] = sink_->WaitForWithSender([](const auto& f) {
    return f.has_ack() && f.ack().created_size() == 1 &&
           f.ack().created(0).handle() == 2;
  });
  EXPECT_EQ(ack_sender, std::this_thread::get_id());
  EXPECT_EQ(ack.ack().created(0).shape(0), 1);
}

TEST_F(InlineBatchTest, TheTransportCanDecline) {
  Ready(1, {1}, 2.0);
  auto [value, sender] = OpItem("mul", 1, 2, /*may_run_inline=*/false);
  EXPECT_NE(sender, std::this_thread::get_id());
  EXPECT_EQ(value, 4.0f);
}

TEST_F(InlineBatchTest, BigInputsGoToTheExecutor) {
  Ready(1, {64, 64}, 3.0);  // 4096 elements: over the inline bound
  auto [value, sender] = OpItem("add", 1, 2);
  EXPECT_NE(sender, std::this_thread::get_id());
  EXPECT_EQ(value, 6.0f);
}

TEST_F(InlineBatchTest, BigFactoriesGoToTheExecutor) {
  session_->WaitUntilIdle();
  v1::Batch b;
  Full(&b, 1, {2048, 2048}, 1.0);  // a list of sizes whose product is large
  const uint64_t rid = AddGet(&b, 1);
  SubmitLikeTransport(b);
  auto [data, sender] = DataOf(rid);
  EXPECT_NE(sender, std::this_thread::get_id());
  EXPECT_EQ(data.data().total_bytes(), 2048u * 2048u * 4u);

  session_->WaitUntilIdle();
  v1::Batch c;
  v1::Call* arange = Add(&c)->mutable_call();
  arange->set_op_id(OpId("arange"));
  (*arange->mutable_attrs())["end"].set_f(1e6);  // a float bound of a factory
  arange->add_outputs(2);
  const uint64_t rid2 = AddGet(&c, 2);
  SubmitLikeTransport(c);
  auto [data2, sender2] = DataOf(rid2);
  EXPECT_NE(sender2, std::this_thread::get_id());
  EXPECT_EQ(data2.data().total_bytes(), 1000000u * 8u);  // int64
}

TEST_F(InlineBatchTest, ASmallUploadAndTheOpsOnItRunInline) {
  // Python's `(x + 2.0).item()`: the scalar is a Put the Call then reads.
  Ready(1, {3}, 1.5);
  v1::Batch b;
  v1::Put* put = Add(&b)->mutable_put();
  put->set_handle(2);
  put->set_dtype(v1::FLOAT32);
  const float two = 2.0f;
  put->mutable_payload()->set_data(
      std::string(reinterpret_cast<const char*>(&two), sizeof(two)));
  put->set_last(true);
  Binary(&b, "add", 1, 2, 3);
  v1::Call* sum = Add(&b)->mutable_call();
  sum->set_op_id(OpId("sum"));
  sum->add_inputs(3);
  sum->add_outputs(4);
  const uint64_t rid = AddGet(&b, 4);
  SubmitLikeTransport(b);
  auto [data, sender] = DataOf(rid);
  EXPECT_EQ(sender, std::this_thread::get_id());
  EXPECT_EQ(FirstFloat(data), 10.5f);
}

TEST_F(InlineBatchTest, SmallInputsWithABigOutputGoToTheExecutor) {
  // A convolution of a 1-pixel image with 4 filters and padding 100: small
  // inputs and attributes, 4 x 201 x 201 outputs. The dry run's inference
  // sees the output's size.
  Ready(1, {1, 1, 1, 1}, 1.0);
  Ready(2, {4, 1, 1, 1}, 2.0);
  v1::Batch b;
  v1::Call* conv = Add(&b)->mutable_call();
  conv->set_op_id(OpId("conv2d"));
  conv->add_inputs(1);
  conv->add_inputs(2);
  auto& pad = (*conv->mutable_attrs())["padding"];
  pad.mutable_ints()->add_values(100);
  pad.mutable_ints()->add_values(100);
  conv->add_outputs(3);
  const uint64_t rid = AddGet(&b, 3);
  SubmitLikeTransport(b);
  auto [data, sender] = DataOf(rid);
  EXPECT_NE(sender, std::this_thread::get_id());
  EXPECT_EQ(data.data().total_bytes(), 4u * 201 * 201 * 4);

  // The same for a view: a broadcast of one element to 64 x 64.
  session_->WaitUntilIdle();
  v1::Batch c;
  v1::Call* expand = Add(&c)->mutable_call();
  expand->set_op_id(OpId("expand"));
  expand->add_inputs(1);
  auto& size = (*expand->mutable_attrs())["size"];
  for (int64_t d : {1, 1, 64, 64}) size.mutable_ints()->add_values(d);
  expand->add_outputs(4);
  const uint64_t rid2 = AddGet(&c, 4);
  SubmitLikeTransport(c);
  auto [data2, sender2] = DataOf(rid2);
  EXPECT_NE(sender2, std::this_thread::get_id());
  EXPECT_EQ(data2.data().total_bytes(), 64u * 64 * 4);
}

TEST_F(InlineBatchTest, CompositesGoToTheExecutor) {
  Ready(1, {2}, 0.0);
  v1::Batch b;
  v1::Call* like = Add(&b)->mutable_call();
  like->set_op_id(OpId("ones_like"));
  like->add_inputs(1);
  like->add_outputs(2);
  const uint64_t rid = AddGet(&b, 2);
  SubmitLikeTransport(b);
  auto [data, sender] = DataOf(rid);
  EXPECT_NE(sender, std::this_thread::get_id());
  EXPECT_EQ(FirstFloat(data), 1.0f);
}

TEST_F(InlineBatchTest, BatchesWithoutASyncPointKeepThePipeline) {
  Ready(1, {1}, 2.0);
  v1::Batch b;
  Binary(&b, "add", 1, 1, 2);
  SubmitLikeTransport(b);
  auto [ack, sender] = sink_->WaitForWithSender([](const auto& f) {
    return f.has_ack() && f.ack().created_size() == 1 &&
           f.ack().created(0).handle() == 2;
  });
  EXPECT_NE(sender, std::this_thread::get_id());
}

TEST_F(InlineBatchTest, ACheapBatchBehindQueuedWorkWaitsItsTurn) {
  // The first batch is long; the cheap one that reads its result must run
  // after it, whichever thread runs it.
  v1::Batch big;
  Full(&big, 1, {512, 512}, 1.0);
  Full(&big, 2, {512, 512}, 2.0);
  v1::Call* mm = Add(&big)->mutable_call();
  mm->set_op_id(OpId("matmul"));
  mm->add_inputs(1);
  mm->add_inputs(2);
  mm->add_outputs(3);
  v1::Call* sum = Add(&big)->mutable_call();
  sum->set_op_id(OpId("sum"));
  sum->add_inputs(3);
  sum->add_outputs(4);
  SubmitLikeTransport(big);
  v1::Batch cheap;
  Binary(&cheap, "add", 4, 4, 5);
  const uint64_t rid = AddGet(&cheap, 5);
  SubmitLikeTransport(cheap);
  auto [data, sender] = DataOf(rid);
  EXPECT_EQ(FirstFloat(data), 2.0f * 512 * 512 * 2 * 512);
}

TEST_F(InlineBatchTest, ErrorsOfAnInlineBatchPoisonAsUsual) {
  Ready(1, {1}, 2.0);
  Ready(2, {1}, 3.0);
  v1::Batch b;
  Binary(&b, "matmul", 1, 2, 3, "train.py:42");  // 1-d @ 1-d: a dot product
  Binary(&b, "add", 3, 99, 4, "train.py:43");    // 99 was never created
  const uint64_t rid = AddGet(&b, 4);
  SubmitLikeTransport(b);
  auto [err, sender] = sink_->WaitForWithSender([rid](const auto& f) {
    return f.has_error() && f.error().request_id() == rid;
  });
  EXPECT_EQ(sender, std::this_thread::get_id());
  EXPECT_NE(err.error().status().message().find("99"), std::string::npos)
      << err.error().status().message();
  EXPECT_EQ(GetFloats(3), std::vector<float>{6.0f});
}

}  // namespace
}  // namespace tensord

// Note [Async downloads] on a fake device whose copies finish only when the
// test says so (async_transfer_test_fixture.h): the executor goes on with
// later commands while a Get's copy is in flight, the data is the value at
// the Get's position, errors reach the Get's request id, Sync and session
// end wait for the data, and staging buffers are reused. Ordering facts
// only: no timing, no sleeps.
#include <vector>

#include "gtest/gtest.h"
#include "server/async_transfer_test_fixture.h"

namespace tensord {
namespace {

using testing_util::AsyncGetTest;
using testing_util::kValues;

TEST_F(AsyncGetTest, LaterCommandsRunWhileTheCopyIsInFlight) {
  v1::Batch b1;
  Put(&b1, 1, kValues);
  Get(&b1, 1, 100);
  session_->Submit(b1);
  gated_->WaitEnqueued(1);
  // The next batch releases the handle (the download keeps the storage)
  // and overwrites nothing the Get reads; its Ack arrives before the data.
  v1::Batch b2;
  Add(&b2)->mutable_release()->add_handles(1);
  Put(&b2, 2, {42});
  session_->Submit(b2);
  const size_t ack2 = WaitAck(seq_);
  EXPECT_FALSE(HasData(100));
  // 1's storage is held by the download: two 512-byte blocks.
  EXPECT_EQ(gated_->allocator()->SessionBytes(7), 1024);
  gated_->Finish(0);
  size_t last = 0;
  EXPECT_EQ(WaitData(100, &last), kValues);
  EXPECT_GT(last, ack2);
  // Sent after Ack 2: stamped past it, so a resume that saw Ack 2 replays
  // the data (Note [Resume]).
  EXPECT_GT(sink_->frame(last).seq(), sink_->frame(ack2).ack().last_seq());
  // The meta describes the tensor as it was at the Get.
  const size_t first = sink_->WaitFor([](const v1::ServerFrame& f) {
    return f.has_data() && f.data().request_id() == 100 &&
           f.data().offset() == 0;
  });
  EXPECT_EQ(sink_->frame(first).data().meta().device(), "gated:0");
  EXPECT_EQ(sink_->frame(first).data().total_bytes(), 40u);
  // Once sent, the download lets go of it.
  v1::Batch sync;
  Add(&sync)->mutable_sync()->set_request_id(1);
  session_->Submit(sync);
  sink_->WaitFor([](const v1::ServerFrame& f) { return f.has_sync_done(); });
  EXPECT_EQ(gated_->allocator()->SessionBytes(7), 512);
}

TEST_F(AsyncGetTest, StagingBuffersAreReturnedAndReused) {
  v1::Batch b1;
  Put(&b1, 1, kValues);
  Get(&b1, 1, 100);
  session_->Submit(b1);
  gated_->WaitEnqueued(1);
  EXPECT_GT(Staged(), 0);
  gated_->Finish(0);
  size_t last = 0;
  WaitData(100, &last);
  // Returned by the time its data is out; the cache keeps the segment.
  v1::Batch sync;
  Add(&sync)->mutable_sync()->set_request_id(1);
  session_->Submit(sync);
  sink_->WaitFor([](const v1::ServerFrame& f) { return f.has_sync_done(); });
  EXPECT_EQ(Staged(), 0);
  const int64_t segments =
      gated_->staging()->GetStats().device.num_device_alloc;
  EXPECT_EQ(segments, 1);
  v1::Batch b2;
  Get(&b2, 1, 101);
  session_->Submit(b2);
  gated_->WaitEnqueued(2);
  gated_->Finish(1);
  EXPECT_EQ(WaitData(101, &last), kValues);
  EXPECT_EQ(gated_->staging()->GetStats().device.num_device_alloc, segments);
}

TEST_F(AsyncGetTest, AFailedCopyIsTheGetsError) {
  v1::Batch b;
  Put(&b, 1, kValues);
  Get(&b, 1, 100);
  session_->Submit(b);
  gated_->WaitEnqueued(1);
  gated_->Finish(0, absl::InternalError("an illegal memory access"));
  const size_t i = sink_->WaitFor([](const v1::ServerFrame& f) {
    return f.has_error() && f.error().request_id() == 100;
  });
  const v1::Status status = sink_->frame(i).error().status();
  EXPECT_EQ(status.op(), "get");
  EXPECT_NE(status.message().find("illegal memory access"), std::string::npos)
      << status.message();
  EXPECT_FALSE(HasData(100));
}

TEST_F(AsyncGetTest, SyncDoneFollowsTheDataOfEarlierGets) {
  v1::Batch b;
  Put(&b, 1, kValues);
  Get(&b, 1, 100);
  Add(&b)->mutable_sync()->set_request_id(5);
  session_->Submit(b);
  gated_->WaitEnqueued(1);
  gated_->Finish(0);
  const size_t done = sink_->WaitFor(
      [](const v1::ServerFrame& f) { return f.has_sync_done(); });
  size_t last = 0;
  EXPECT_EQ(WaitData(100, &last), kValues);
  EXPECT_LT(last, done);
}

TEST_F(AsyncGetTest, SessionEndSendsTheDataOfDownloadsInFlight) {
  v1::Batch b;
  Put(&b, 1, kValues);
  Get(&b, 1, 100);
  session_->Submit(b);
  gated_->WaitEnqueued(1);
  session_->Close();
  gated_->Finish(0);
  session_->WaitDone();
  size_t last = 0;
  EXPECT_EQ(WaitData(100, &last), kValues);
  EXPECT_GT(sink_->ended_at(), static_cast<int64_t>(last));
  EXPECT_EQ(gated_->allocator()->SessionBytes(7), 0);
}
}  // namespace
}  // namespace tensord

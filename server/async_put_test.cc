// Note [Async uploads] on a fake device whose copies finish only when the
// test says so (async_transfer_test_fixture.h): an upload is staged, the
// executor does not wait for its copy, and its staging buffer returns only
// once the copy completed; a copy that cannot be queued poisons the handle.
// Ordering facts only: no timing, no sleeps.
#include <vector>

#include "gtest/gtest.h"
#include "server/async_transfer_test_fixture.h"

namespace tensord {
namespace {

using testing_util::AsyncGetTest;
using testing_util::kValues;

TEST_F(AsyncGetTest, UploadsAreStagedAndTheExecutorDoesNotWait) {
  gated_->HoldUploads();
  v1::Batch b1;
  Put(&b1, 1, kValues);
  session_->Submit(b1);
  WaitAck(seq_);
  ASSERT_EQ(gated_->uploads(), 1u);
  // The copy has not completed: its buffer stays out of the staging cache.
  EXPECT_GT(Staged(), 0);
  // Later commands run meanwhile; a second upload gets another buffer.
  v1::Batch b2;
  Put(&b2, 2, {42});
  session_->Submit(b2);
  WaitAck(seq_);
  ASSERT_EQ(gated_->uploads(), 2u);
  const int64_t both = Staged();
  EXPECT_GT(both, 0);
  gated_->FinishUpload(0);
  EXPECT_LT(Staged(), both);
  gated_->FinishUpload(1);
  EXPECT_EQ(Staged(), 0);
  // Returned buffers are reused, not pinned again.
  const int64_t segments =
      gated_->staging()->GetStats().device.num_device_alloc;
  v1::Batch b3;
  Put(&b3, 3, kValues);
  session_->Submit(b3);
  WaitAck(seq_);
  gated_->FinishUpload(2);
  EXPECT_EQ(gated_->staging()->GetStats().device.num_device_alloc, segments);
  v1::Batch b4;
  Get(&b4, 1, 100);
  Get(&b4, 2, 101);
  session_->Submit(b4);
  gated_->WaitEnqueued(2);
  gated_->Finish(0);
  gated_->Finish(1);
  size_t last = 0;
  EXPECT_EQ(WaitData(100, &last), kValues);
  EXPECT_EQ(WaitData(101, &last), std::vector<float>{42});
}

TEST_F(AsyncGetTest, ChunkedUploadsStageEveryChunk) {
  gated_->HoldUploads();
  std::vector<float> values(40);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * i;
  v1::Batch b;
  const size_t chunk = 48;  // bytes: 12 floats, the last chunk shorter
  const char* bytes = reinterpret_cast<const char*>(values.data());
  const size_t total = values.size() * sizeof(float);
  for (size_t offset = 0; offset < total; offset += chunk) {
    v1::Put* put = Add(&b)->mutable_put();
    put->set_handle(1);
    if (offset == 0) {
      put->set_dtype(v1::FLOAT32);
      put->add_shape(static_cast<int64_t>(values.size()));
      put->set_device("gated:0");
    }
    put->set_offset(offset);
    put->mutable_payload()->set_data(bytes + offset,
                                     std::min(chunk, total - offset));
    put->set_last(offset + chunk >= total);
  }
  Get(&b, 1, 100);
  session_->Submit(b);
  gated_->WaitEnqueued(1);
  EXPECT_EQ(gated_->uploads(), 4u);
  for (size_t i = 0; i < 4; ++i) gated_->FinishUpload(i);
  EXPECT_EQ(Staged() > 0, true);  // the Get's buffer only
  gated_->Finish(0);
  size_t last = 0;
  EXPECT_EQ(WaitData(100, &last), values);
}

TEST_F(AsyncGetTest, AnUploadThatCannotBeQueuedPoisonsItsHandle) {
  gated_->FailUploads(absl::InternalError("cudaMemcpyAsync: launch failure"));
  v1::Batch b;
  Put(&b, 1, kValues);
  session_->Submit(b);
  const v1::Ack ack = sink_->frame(WaitAck(seq_)).ack();
  ASSERT_EQ(ack.created_size(), 1);
  EXPECT_EQ(ack.created(0).error().op(), "put");
  EXPECT_NE(ack.created(0).error().message().find("launch failure"),
            std::string::npos);
  EXPECT_EQ(Staged(), 0);  // the buffer went back at once
}
}  // namespace
}  // namespace tensord

#include "client/command_batch.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "proto/packed_commands.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

uint64_t AddSync(CommandBatch* batch, uint64_t request_id) {
  return batch->Add(
      16,
      [&](v1::Command* command) {
        command->mutable_sync()->set_request_id(request_id);
      },
      nullptr);
}

TEST(CommandBatchTest, NumbersCommandsAndTakesThem) {
  CommandBatch batch;
  EXPECT_TRUE(batch.empty());
  EXPECT_FALSE(batch.ready());
  EXPECT_EQ(AddSync(&batch, 1), 1u);
  EXPECT_EQ(AddSync(&batch, 2), 2u);
  EXPECT_TRUE(batch.ready());
  EXPECT_EQ(batch.size(), 2);
  EXPECT_EQ(batch.bytes(), 32u);
  EXPECT_EQ(batch.last_seq(), 2u);
  std::shared_ptr<const v1::ClientFrame> frame = batch.Take(/*acked_seq=*/7);
  ASSERT_EQ(frame->batch().commands_size(), 2);
  EXPECT_EQ(frame->batch().commands(1).seq(), 2u);
  EXPECT_EQ(frame->batch().received_seq(), 7u);
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(batch.bytes(), 0u);
  EXPECT_EQ(batch.next_seq(), 3u);
}

TEST(CommandBatchTest, ReleasesJoinAsOneCommandUnlessHeldBack) {
  CommandBatch batch;
  batch.QueueRelease(10);
  batch.QueueRelease(11);
  EXPECT_FALSE(batch.empty());
  EXPECT_TRUE(batch.ready());
  EXPECT_EQ(batch.size(), 0);
  batch.set_in_chunked_put(true);
  EXPECT_FALSE(batch.ready());
  batch.MoveReleasesIn();
  EXPECT_EQ(batch.size(), 0);  // held back between an upload's chunks
  batch.set_in_chunked_put(false);
  batch.MoveReleasesIn();
  EXPECT_FALSE(batch.has_releases());
  std::shared_ptr<const v1::ClientFrame> frame = batch.Take(0);
  ASSERT_EQ(frame->batch().commands_size(), 1);
  const v1::Command& release = frame->batch().commands(0);
  EXPECT_EQ(release.seq(), 1u);
  EXPECT_EQ(release.release().handles_size(), 2);
}

TEST(CommandBatchTest, PackedCommandsShareARun) {
  CommandBatch batch;
  batch.set_packed(true);
  const CommandBatch::PackFn pack = [](std::string* out) {
    packed::AppendCall(/*op_id=*/1, /*site_id=*/0, {}, {}, out);
  };
  auto fill = [](v1::Command*) { FAIL() << "packed commands are not filled"; };
  EXPECT_EQ(batch.Add(8, fill, &pack), 1u);
  EXPECT_EQ(batch.Add(8, fill, &pack), 2u);
  batch.QueueRelease(3);
  batch.MoveReleasesIn();
  EXPECT_EQ(batch.size(), 3);
  std::shared_ptr<const v1::ClientFrame> frame = batch.Take(0);
  ASSERT_EQ(frame->batch().commands_size(), 1);
  EXPECT_EQ(frame->batch().commands(0).packed().count(), 3u);
  EXPECT_EQ(packed::LastSeq(frame->batch().commands(0)), 3u);
}

}  // namespace
}  // namespace internal
}  // namespace client
}  // namespace tensord

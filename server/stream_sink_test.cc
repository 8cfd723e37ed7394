#include "server/stream_sink.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tensord {
namespace {

// Records what the sink asks of the stream; writes finish when the test says.
class FakeWriter : public StreamWriter {
 public:
  void DoWrite(std::shared_ptr<const v1::ServerFrame> frame) override {
    writes.push_back(frame->sync_done().request_id());
  }
  void DoFinish(const absl::Status& status) override {
    finished.push_back(status);
  }
  void DoRead() override { ++reads; }

  std::vector<uint64_t> writes;
  std::vector<absl::Status> finished;
  int reads = 0;
};

v1::ServerFrame SyncDone(uint64_t id) {
  v1::ServerFrame frame;
  frame.mutable_sync_done()->set_request_id(id);
  return frame;
}

TEST(StreamSinkTest, OneWriteInFlightInOrder) {
  FakeWriter writer;
  StreamSink sink(&writer);
  sink.Send(SyncDone(1));
  sink.Send(SyncDone(2));
  sink.Send(SyncDone(3));
  EXPECT_EQ(writer.writes, (std::vector<uint64_t>{1}));
  EXPECT_GT(sink.queued_bytes(), 0u);
  sink.WriteDone(true);
  EXPECT_EQ(writer.writes, (std::vector<uint64_t>{1, 2}));
  sink.WriteDone(true);
  sink.WriteDone(true);
  EXPECT_EQ(writer.writes, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(sink.queued_bytes(), 0u);
  EXPECT_TRUE(writer.finished.empty());
  sink.Detach();
}

TEST(StreamSinkTest, EndFinishesAfterTheQueuedFrames) {
  FakeWriter writer;
  StreamSink sink(&writer);
  sink.Send(SyncDone(1));
  sink.Send(SyncDone(2));
  sink.End(absl::AbortedError("killed"));
  sink.Send(SyncDone(3));  // after End: dropped
  EXPECT_TRUE(writer.finished.empty());
  sink.WriteDone(true);
  sink.WriteDone(true);
  EXPECT_EQ(writer.writes, (std::vector<uint64_t>{1, 2}));
  ASSERT_EQ(writer.finished.size(), 1u);
  EXPECT_EQ(writer.finished[0], absl::AbortedError("killed"));
  sink.Detach();
}

TEST(StreamSinkTest, FailedWriteDropsTheQueueAndFinishesCancelled) {
  FakeWriter writer;
  StreamSink sink(&writer);
  sink.Send(SyncDone(1));
  sink.Send(SyncDone(2));
  sink.WriteDone(false);  // the peer is gone
  EXPECT_EQ(writer.writes, (std::vector<uint64_t>{1}));
  EXPECT_EQ(sink.queued_bytes(), 0u);
  ASSERT_EQ(writer.finished.size(), 1u);
  EXPECT_EQ(writer.finished[0].code(), absl::StatusCode::kCancelled);
  sink.Detach();
}

TEST(StreamSinkTest, ResumeReadingReadsUntilDetached) {
  FakeWriter writer;
  StreamSink sink(&writer);
  sink.ResumeReading();
  EXPECT_EQ(writer.reads, 1);
  sink.Detach();
  sink.ResumeReading();
  sink.Send(SyncDone(1));
  EXPECT_EQ(writer.reads, 1);
  EXPECT_TRUE(writer.writes.empty());
}

}  // namespace
}  // namespace tensord

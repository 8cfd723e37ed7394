#include "client/replay_log.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

// A batch of plain commands with seqs [first, last]; `packed` > 1
// makes the last one a packed run of that many commands starting there.
ReplayLog::Frame Batch(uint64_t first, uint64_t last, uint32_t packed = 0) {
  auto frame = std::make_shared<v1::ClientFrame>();
  for (uint64_t seq = first; seq <= last; ++seq) {
    v1::Command* command = frame->mutable_batch()->add_commands();
    command->set_seq(seq);
    if (seq == last && packed > 1) command->mutable_packed()->set_count(packed);
  }
  return frame;
}

std::vector<uint64_t> Seqs(const std::vector<ReplayLog::Frame>& frames) {
  std::vector<uint64_t> seqs;
  for (const auto& frame : frames) {
    for (const v1::Command& command : frame->batch().commands()) {
      seqs.push_back(command.seq());
    }
  }
  return seqs;
}

v1::ServerFrame Data(uint64_t seq, uint64_t request_id, uint64_t offset) {
  v1::ServerFrame frame;
  frame.set_seq(seq);
  frame.mutable_data()->set_request_id(request_id);
  frame.mutable_data()->set_offset(offset);
  return frame;
}

v1::ServerFrame Ack(uint64_t last_seq) {
  v1::ServerFrame frame;
  frame.set_seq(last_seq);
  frame.mutable_ack()->set_last_seq(last_seq);
  return frame;
}

TEST(ReplayLogTest, ResendsWhatTheDaemonHadNotApplied) {
  ReplayLog log;
  log.Sent(2, Batch(1, 2));
  log.Sent(4, Batch(3, 4));
  log.Sent(6, Batch(5, 6));
  log.Acked(2);  // drops the first batch
  EXPECT_FALSE(log.resend_pending());
  log.Resumed(/*applied=*/3);
  EXPECT_TRUE(log.resend_pending());
  EXPECT_EQ(log.resumes(), 1);
  // Seq 3 ran: left out of its batch; the last batch goes whole.
  EXPECT_EQ(Seqs(log.TakeResend()), (std::vector<uint64_t>{4, 5, 6}));
  EXPECT_FALSE(log.resend_pending());
}

TEST(ReplayLogTest, APackedRunStraddlingTheAppliedSeqGoesWhole) {
  ReplayLog log;
  log.Sent(7, Batch(4, 5, /*packed=*/3));  // 4, then a run of 5..7
  log.Resumed(/*applied=*/6);
  EXPECT_EQ(Seqs(log.TakeResend()), (std::vector<uint64_t>{5}));
}

TEST(ReplayLogTest, SkipsTheReplayOfFramesReceivedSinceTheLastAck) {
  ReplayLog log;
  EXPECT_FALSE(log.SkipReplayed(Ack(2), /*acked_seq=*/0));
  EXPECT_FALSE(log.SkipReplayed(Data(3, 7, 0), 2));
  EXPECT_FALSE(log.SkipReplayed(Data(3, 7, 100), 2));
  log.Resumed(/*applied=*/3);
  EXPECT_TRUE(log.SkipReplayed(Data(3, 7, 0), 2));
  EXPECT_TRUE(log.SkipReplayed(Data(3, 7, 100), 2));
  EXPECT_FALSE(log.SkipReplayed(Data(3, 7, 200), 2));  // new: handled
}

TEST(ReplayLogTest, AnUnexpectedFrameEndsTheSkipping) {
  ReplayLog log;
  EXPECT_FALSE(log.SkipReplayed(Data(3, 7, 0), 2));
  EXPECT_FALSE(log.SkipReplayed(Data(3, 7, 100), 2));
  log.Resumed(3);
  EXPECT_FALSE(log.SkipReplayed(Data(3, 8, 0), 2));
  EXPECT_FALSE(log.SkipReplayed(Data(3, 7, 100), 2));
}

TEST(ReplayLogTest, AnAckForgetsTheFramesBeforeIt) {
  ReplayLog log;
  EXPECT_FALSE(log.SkipReplayed(Data(3, 7, 0), 2));
  EXPECT_FALSE(log.SkipReplayed(Ack(3), 2));
  log.Resumed(3);
  EXPECT_FALSE(log.SkipReplayed(Data(3, 7, 0), 3));
}

}  // namespace
}  // namespace internal
}  // namespace client
}  // namespace tensord

// SessionOutbox's replay buffer: what a resume replays, and what the client's
// confirmations (Batch.received_seq) let it drop. The sink is
// testing_util::RecordingSink; the gRPC stream sink is covered by the resume
// integration tests (tests:resume_test, tests:client_resume_test).
#include "server/session_outbox.h"

#include <memory>

#include "gtest/gtest.h"
#include "server/session_test_fixture.h"

namespace tensord {
namespace {

using testing_util::RecordingSink;

// An Ack for commands up to `seq`, stamped by the outbox.
void SendAck(SessionOutbox& outbox, uint64_t seq) {
  outbox.SetSeq(seq);
  v1::ServerFrame frame;
  frame.mutable_ack()->set_last_seq(seq);
  outbox.Send(std::move(frame));
}

// The last_seq of every Ack the sink received, in order.
std::vector<uint64_t> AckSeqs(RecordingSink& sink, size_t n) {
  std::vector<uint64_t> seqs;
  for (size_t i = 0; i < n; ++i) {
    seqs.push_back(sink.WaitFor([&](const v1::ServerFrame& f) {
                         return f.has_ack() &&
                                (seqs.empty() ||
                                 f.ack().last_seq() > seqs.back());
                       })
                       .ack()
                       .last_seq());
  }
  return seqs;
}

TEST(SessionOutboxTest, ConfirmedRepliesLeaveTheReplayBuffer) {
  SessionOutbox outbox(/*max_bytes=*/1 << 20);
  for (uint64_t seq = 1; seq <= 10; ++seq) SendAck(outbox, seq);
  const size_t all = outbox.buffered_bytes();
  ASSERT_GT(all, 0u);
  outbox.Confirm(4);
  const size_t after = outbox.buffered_bytes();
  EXPECT_LT(after, all);
  EXPECT_GT(after, 0u);
  outbox.Confirm(2);  // an older confirmation changes nothing
  EXPECT_EQ(outbox.buffered_bytes(), after);
  outbox.Confirm(10);
  EXPECT_EQ(outbox.buffered_bytes(), 0u);
}

TEST(SessionOutboxTest, ResumeReplaysOnlyUnconfirmedReplies) {
  SessionOutbox outbox(/*max_bytes=*/1 << 20);
  for (uint64_t seq = 1; seq <= 6; ++seq) SendAck(outbox, seq);
  outbox.Confirm(3);
  auto sink = std::make_shared<RecordingSink>();
  v1::ServerFrame welcome;
  welcome.mutable_welcome()->set_session_id("s");
  ASSERT_TRUE(outbox.Attach(sink, /*received_seq=*/4, welcome).ok());
  EXPECT_EQ(AckSeqs(*sink, 2), (std::vector<uint64_t>{5, 6}));
}

TEST(SessionOutboxTest, ResumeFromBeforeAConfirmationIsRefused) {
  SessionOutbox outbox(/*max_bytes=*/1 << 20);
  for (uint64_t seq = 1; seq <= 5; ++seq) SendAck(outbox, seq);
  outbox.Confirm(4);
  auto sink = std::make_shared<RecordingSink>();
  const absl::Status status =
      outbox.Attach(sink, /*received_seq=*/2, v1::ServerFrame());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("confirmed receiving the replies up to 4"),
            std::string::npos)
      << status;
}

}  // namespace
}  // namespace tensord

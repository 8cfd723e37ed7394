// SessionOutbox's replay buffer: what a resume replays, and what the client's
// confirmations (Batch.received_seq) let it drop. The sink is
// testing_util::RecordingSink; the gRPC stream sink is covered by the resume
// integration tests (tests:resume_test, tests:client_resume_test).
#include "server/session_outbox.h"

#include <memory>

#include "gtest/gtest.h"
#include "proto/packed_commands.h"
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

// Note [Held acks]: an Ack for `seq` creating handle `seq` as a TensorMeta
// and handle 100 + `seq` as a packed entry (Note [Packed metas]), so merged
// Acks can be checked for every handle, in order.
void SendAckCreating(SessionOutbox& outbox, uint64_t seq) {
  outbox.SetSeq(seq);
  v1::ServerFrame frame;
  frame.mutable_ack()->set_last_seq(seq);
  frame.mutable_ack()->add_created()->set_handle(seq);
  packed::Meta meta;
  meta.handle = 100 + seq;
  packed::AppendMeta(meta, frame.mutable_ack()->mutable_packed_created());
  outbox.Send(std::move(frame));
}

class HeldAcksTest : public ::testing::Test {
 protected:
  HeldAcksTest() {
    v1::ServerFrame welcome;
    welcome.mutable_welcome();
    EXPECT_TRUE(outbox_.Attach(sink_, 0, welcome).ok());
    outbox_.HoldAcksFrom(std::this_thread::get_id());
  }
  // The Acks and Data the sink got (the Welcome left out).
  std::vector<v1::ServerFrame> Replies() {
    std::vector<v1::ServerFrame> out;
    for (auto& f : sink_->frames()) {
      if (!f.has_welcome()) out.push_back(std::move(f));
    }
    return out;
  }
  SessionOutbox outbox_{1 << 20};
  std::shared_ptr<RecordingSink> sink_ = std::make_shared<RecordingSink>();
};

TEST_F(HeldAcksTest, AnotherFrameForwardsThemFirstAsOneAck) {
  for (uint64_t seq = 1; seq <= 3; ++seq) SendAckCreating(outbox_, seq);
  EXPECT_TRUE(Replies().empty());
  EXPECT_EQ(outbox_.held_acks().first_seq, 1u);
  v1::ServerFrame data;
  data.mutable_data()->set_request_id(9);
  outbox_.Send(data);
  const std::vector<v1::ServerFrame> got = Replies();
  ASSERT_EQ(got.size(), 2u);
  ASSERT_TRUE(got[0].has_ack());
  EXPECT_EQ(got[0].ack().last_seq(), 3u);
  ASSERT_EQ(got[0].ack().created_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got[0].ack().created(i).handle(), static_cast<uint64_t>(i + 1));
  }
  packed::Reader metas(got[0].ack().packed_created());
  for (uint64_t handle = 101; handle <= 103; ++handle) {
    packed::Meta meta;
    ASSERT_TRUE(metas.NextMeta(&meta).ok());
    EXPECT_EQ(meta.handle, handle);
  }
  EXPECT_TRUE(metas.done());
  EXPECT_EQ(got[1].data().request_id(), 9u);
  EXPECT_EQ(outbox_.held_acks().first_seq, 0u);
}

TEST_F(HeldAcksTest, FlushSendsThemAndLaterOnesCoverTheSeqsAfter) {
  SendAckCreating(outbox_, 1);
  outbox_.FlushHeldAcks();
  ASSERT_EQ(Replies().size(), 1u);  // a single held Ack goes out as it is
  SendAckCreating(outbox_, 2);
  SendAckCreating(outbox_, 3);
  EXPECT_EQ(outbox_.held_acks().first_seq, 2u);  // what the client may ask for
  outbox_.FlushHeldAcks();
  const auto got = Replies();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].ack().last_seq(), 3u);
  EXPECT_EQ(got[1].ack().created_size(), 2);
  outbox_.FlushHeldAcks();  // none held: nothing sent
  EXPECT_EQ(Replies().size(), 2u);
}

TEST_F(HeldAcksTest, TooManyHeldGoOutTogether) {
  for (uint64_t seq = 1; seq < SessionOutbox::kMaxHeldAcks; ++seq) {
    SendAckCreating(outbox_, seq);
  }
  EXPECT_TRUE(Replies().empty());
  SendAckCreating(outbox_, SessionOutbox::kMaxHeldAcks);
  const auto got = Replies();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].ack().created_size(),
            static_cast<int>(SessionOutbox::kMaxHeldAcks));
}

TEST_F(HeldAcksTest, OtherThreadsAndTheEndDoNotWait) {
  SendAckCreating(outbox_, 1);  // held (this thread holds)
  std::thread other([&] { SendAckCreating(outbox_, 2); });
  other.join();
  auto got = Replies();  // the other thread's Ack forwarded the held one first
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].ack().last_seq(), 1u);
  EXPECT_EQ(got[1].ack().last_seq(), 2u);
  SendAckCreating(outbox_, 3);
  outbox_.End(absl::OkStatus());
  got = Replies();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].ack().last_seq(), 3u);
  EXPECT_TRUE(sink_->ended());
}

TEST_F(HeldAcksTest, AResumeReplaysTheOriginals) {
  for (uint64_t seq = 1; seq <= 3; ++seq) SendAckCreating(outbox_, seq);
  outbox_.DetachAny();
  auto second = std::make_shared<RecordingSink>();
  v1::ServerFrame welcome;
  welcome.mutable_welcome();
  ASSERT_TRUE(outbox_.Attach(second, 1, welcome).ok());
  EXPECT_EQ(AckSeqs(*second, 2), std::vector<uint64_t>({2, 3}));
  EXPECT_EQ(outbox_.held_acks().first_seq, 0u);
}

}  // namespace
}  // namespace tensord

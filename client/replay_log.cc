// The resume bookkeeping of a client session. See client/replay_log.h.
#include "client/replay_log.h"

#include <utility>

#include "proto/packed_commands.h"

namespace tensord {
inline namespace client {
namespace internal {

void ReplayLog::Sent(uint64_t last_seq, Frame frame) {
  unacked_.push_back({last_seq, std::move(frame)});
}

void ReplayLog::Acked(uint64_t acked_seq) {
  while (!unacked_.empty() && unacked_.front().last_seq <= acked_seq) {
    unacked_.pop_front();
  }
}

ReplayLog::ReceivedFrame ReplayLog::Describe(const v1::ServerFrame& frame) {
  ReceivedFrame out;
  out.seq = frame.seq();
  out.kind = static_cast<int>(frame.kind_case());
  switch (frame.kind_case()) {
    case v1::ServerFrame::kData:
      out.request_id = frame.data().request_id();
      out.offset = frame.data().offset();
      break;
    case v1::ServerFrame::kSyncDone:
      out.request_id = frame.sync_done().request_id();
      break;
    case v1::ServerFrame::kError:
      out.request_id = frame.error().request_id();
      break;
    case v1::ServerFrame::kProfile:
      out.request_id = frame.profile().request_id();
      break;
    default:
      break;
  }
  return out;
}

bool ReplayLog::SkipReplayed(const v1::ServerFrame& frame, uint64_t acked_seq) {
  const ReceivedFrame got = Describe(frame);
  if (!replay_skip_.empty()) {
    if (got == replay_skip_.front()) {
      replay_skip_.pop_front();
      return true;  // handled before the stream broke
    }
    replay_skip_.clear();  // not the replay expected: handle it normally
  }
  if (frame.has_ack()) {
    if (frame.ack().last_seq() > acked_seq) received_since_ack_.clear();
  } else if (frame.seq() > acked_seq) {
    received_since_ack_.push_back(got);
  }
  return false;
}

void ReplayLog::Resumed(uint64_t applied) {
  // The replay starts with the frames received since the last Ack.
  replay_skip_.assign(received_since_ack_.begin(), received_since_ack_.end());
  ++resumes_;
  resend_after_ = applied;
  resend_pending_ = true;
}

std::vector<ReplayLog::Frame> ReplayLog::TakeResend() {
  resend_pending_ = false;
  // Commands at or below resumed_applied_seq ran: their replies are in the
  // replay, they must not be sent again.
  const uint64_t applied = resend_after_;
  std::vector<Frame> resend;
  for (const UnackedBatch& batch : unacked_) {
    if (batch.last_seq <= applied) continue;
    if (batch.frame->batch().commands(0).seq() > applied) {
      resend.push_back(batch.frame);
      continue;
    }
    // A packed run that straddles `applied` goes whole: the daemon skips
    // its applied entries (Note [Packed commands]).
    auto trimmed = std::make_shared<v1::ClientFrame>();
    for (const v1::Command& command : batch.frame->batch().commands()) {
      if (packed::LastSeq(command) > applied) {
        *trimmed->mutable_batch()->add_commands() = command;
      }
    }
    resend.push_back(std::move(trimmed));
  }
  return resend;
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

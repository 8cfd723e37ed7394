// What a C++ client session keeps to survive a broken stream
// (docs/protocol.md "Resume"; Session::Resume in client/session_resume.cc):
// the batches sent and not yet acknowledged, which a resumed stream gets
// again, and the frames received since the last Ack, which the daemon's
// replay repeats and the reader skips (they were handled before the break).
//
// A resume: Resumed(Welcome.resumed_applied_seq) arms the replay to skip and
// marks a resend pending; the flusher writes TakeResend() on the new stream,
// the commands at or below the applied seq left out (their replies are in
// the replay) except inside a packed run that straddles it, which goes whole
// (the daemon skips its applied entries: Note [Packed commands]).
//
// Thread safety: none. Session keeps one under its mu_: producers' flushes
// add batches, the reader thread skips and records frames and applies Acks,
// the flusher takes the resend.
#ifndef TENSORD_CLIENT_REPLAY_LOG_H_
#define TENSORD_CLIENT_REPLAY_LOG_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {
namespace internal {

class ReplayLog {
 public:
  using Frame = std::shared_ptr<const v1::ClientFrame>;

  // A batch ending with command `last_seq` was sent (or is queued for a
  // resumed stream): kept until an Ack covers it.
  void Sent(uint64_t last_seq, Frame frame);
  // An Ack up to `acked_seq` arrived: the batches it covers are dropped.
  void Acked(uint64_t acked_seq);

  // True when `frame` is the replay of one received before the break (the
  // caller skips it). Otherwise records it for a later replay; `acked_seq`
  // is the session's last Ack seq before `frame`.
  bool SkipReplayed(const v1::ServerFrame& frame, uint64_t acked_seq);

  // A new stream was adopted whose daemon had applied every command up to
  // `applied` (Welcome.resumed_applied_seq).
  void Resumed(uint64_t applied);
  // True from Resumed until TakeResend.
  bool resend_pending() const { return resend_pending_; }
  // The frames to write on the new stream, in order (see the top comment).
  std::vector<Frame> TakeResend();
  // How many times Resumed ran.
  int resumes() const { return resumes_; }

 private:
  struct UnackedBatch {
    uint64_t last_seq = 0;
    Frame frame;
  };
  // A frame received after the last Ack: what a resume's replay repeats.
  struct ReceivedFrame {
    uint64_t seq = 0;
    int kind = 0;
    uint64_t request_id = 0;
    uint64_t offset = 0;
    bool operator==(const ReceivedFrame& other) const {
      return seq == other.seq && kind == other.kind &&
             request_id == other.request_id && offset == other.offset;
    }
  };
  static ReceivedFrame Describe(const v1::ServerFrame& frame);

  std::deque<UnackedBatch> unacked_;
  std::vector<ReceivedFrame> received_since_ack_;
  std::deque<ReceivedFrame> replay_skip_;
  bool resend_pending_ = false;
  uint64_t resend_after_ = 0;  // Welcome.resumed_applied_seq
  int resumes_ = 0;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_REPLAY_LOG_H_

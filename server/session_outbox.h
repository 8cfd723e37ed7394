// A session's outgoing frames across streams: forwards to the attached
// stream's sink and keeps a bounded replay buffer so that a client whose
// stream dropped can resume without losing replies (Note [Resume]).
//
// Note [Resume]: every frame is stamped with the last command seq of the
// batch that produced it. A resuming client says which Ack it saw last
// (Hello.resume_received_seq); the outbox replays every buffered frame with a
// larger seq, and the client resends the commands after
// Welcome.resumed_applied_seq, which the session skips if already applied
// (nothing runs twice). Clients ignore replies to requests they already
// completed. The buffer holds at most `max_bytes` of memory (a frame on an
// arena counts its arena's blocks); a resume that needs
// evicted frames fails with DATA_LOSS. A frame sent after the current
// batch's Ack (the data of a Get that finished after its batch, Note [Async
// downloads]) is stamped seq + 1, so that a client which saw that Ack and not
// the frame still gets it replayed. Buffered frames are shared with the
// stream (FrameSink::SendShared), never copied: a download's Data chunks
// cost no extra pass over their bytes.
//
// Thread-safe: the executor sends while transports attach and detach.
#ifndef TENSORD_SERVER_SESSION_OUTBOX_H_
#define TENSORD_SERVER_SESSION_OUTBOX_H_

#include <deque>
#include <memory>

#include "runtime/core/mutex.h"
#include "server/frame_sink.h"

namespace tensord {

class SessionOutbox : public FrameSink {
 public:
  explicit SessionOutbox(size_t max_bytes) : max_bytes_(max_bytes) {}

  // FrameSink: stamps, buffers, forwards when attached.
  void Send(v1::ServerFrame frame) override;
  void SendOwned(std::shared_ptr<v1::ServerFrame> frame) override;
  void End(absl::Status status) override;

  // The seq stamped on frames from now on (set by the executor per batch).
  void SetSeq(uint64_t seq);
  // Makes `sink` the stream: sends `welcome` (never buffered), then the
  // buffered frames after `received_seq`, then whatever comes next, in that
  // order. DATA_LOSS (nothing attached) if some were evicted.
  absl::Status Attach(std::shared_ptr<FrameSink> sink, uint64_t received_seq,
                      v1::ServerFrame welcome);
  // The stream `sink` is gone: frames are only buffered until the next
  // Attach. False (nothing changes) if another stream is attached by now.
  bool Detach(const FrameSink* sink);
  bool AttachedTo(const FrameSink* sink);
  // Detaches whatever stream is attached (a resume takes over a stream the
  // daemon has not yet noticed is dead).
  void DetachAny();
  // The client received every frame up to `received_seq` (Batch.
  // received_seq): they leave the replay buffer, which otherwise holds up to
  // max_bytes per session for as long as the session lives.
  void Confirm(uint64_t received_seq);
  // Bytes the replay buffer holds now (tests, metrics).
  size_t buffered_bytes();

 private:
  const size_t max_bytes_;
  // Serialises forwarding to the sink, so a replay and new frames never
  // interleave. Taken before mu_ when both are held.
  Mutex forward_mu_;
  Mutex mu_;
  std::shared_ptr<FrameSink> sink_ ABSL_GUARDED_BY(mu_);
  struct Buffered {
    std::shared_ptr<const v1::ServerFrame> frame;
    size_t bytes;  // what it holds in memory (its arena's, if on one)
  };
  std::deque<Buffered> buffer_ ABSL_GUARDED_BY(mu_);
  size_t buffered_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evicted_seq_ ABSL_GUARDED_BY(mu_) = 0;    // highest seq evicted
  uint64_t confirmed_seq_ ABSL_GUARDED_BY(mu_) = 0;  // highest Confirm
  uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
  bool acked_ ABSL_GUARDED_BY(mu_) = false;  // the Ack of seq_ was sent
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tensord

#endif  // TENSORD_SERVER_SESSION_OUTBOX_H_

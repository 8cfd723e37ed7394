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
// Note [Held acks]: a same-host client that writes its batches into a
// command ring (server/command_ring.h) mostly waits for values, which the
// mailbox brings; every Ack it gets on the stream costs both processes a
// gRPC message (on 2 vCPUs, more than the rest of its round trip). So Acks
// sent from the ring's reader thread (the batches it runs inline: value
// reads) are held back: buffered for a resume as usual, but forwarded only
// as one merged Ack (every created TensorMeta in order, the last last_seq)
// when another frame goes out (so no reply overtakes an earlier batch's
// Ack), when kMaxHeldAcks are held, or when the reader flushes them: after
// kAckDelayNs, or at once when the client asks (the ring's ack_wanted word:
// it waits for an Ack's metadata or seq).
//
// Memory: frames kept for a resume are charged to the quota of the user's
// account on the cpu allocator while kept (Note [Wire limits] in
// server/wire_limits.h: a client that stops reading or never confirms must
// not make the daemon hold replies outside its quota). When the quota cannot
// hold a frame, the oldest frames are evicted for it, and when none are
// left it is not kept: a resume that needs it fails with DATA_LOSS, as past
// max_bytes. Nothing else changes: the frame is sent all the same.
//
// Thread-safe: the executor sends while transports attach and detach.
#ifndef TENSORD_SERVER_SESSION_OUTBOX_H_
#define TENSORD_SERVER_SESSION_OUTBOX_H_

#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/core/mutex.h"
#include "runtime/memory/caching_allocator.h"
#include "server/external_charge.h"
#include "server/frame_sink.h"

namespace tensord {

class SessionOutbox : public FrameSink {
 public:
  // `quota` (null: none) is charged for `session` (CachingAllocator::
  // ChargeExternal) for the frames kept.
  explicit SessionOutbox(size_t max_bytes, CachingAllocator* quota = nullptr,
                         uint64_t session = 0)
      : max_bytes_(max_bytes), quota_(quota), session_(session) {}

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

  // Note [Held acks]: Acks sent from thread `holder` are held from now on.
  void HoldAcksFrom(std::thread::id holder);
  // Forwards the held Acks as one frame (nothing when none are held).
  void FlushHeldAcks();
  // Forwards them if the client waits for one (`ack_wanted` reaches the
  // seqs they cover) or the first was held kAckDelayNs ago; returns the ns
  // until they are due, or -1 when none are held (any more).
  int64_t FlushDueAcks(uint64_t ack_wanted);
  // The first command seq the held Acks cover (0: none held) and when the
  // first of them was held (PhaseClockNs).
  struct HeldAcks {
    uint64_t first_seq = 0;
    uint64_t since_ns = 0;
  };
  HeldAcks held_acks();

  static constexpr size_t kMaxHeldAcks = 64;
  static constexpr uint64_t kAckDelayNs = 1'000'000;

 private:
  const size_t max_bytes_;
  CachingAllocator* const quota_;
  const uint64_t session_;
  // Serialises forwarding to the sink, so a replay and new frames never
  // interleave. Taken before mu_ when both are held.
  Mutex forward_mu_;
  Mutex mu_;
  std::shared_ptr<FrameSink> sink_ ABSL_GUARDED_BY(mu_);
  struct Buffered {
    std::shared_ptr<const v1::ServerFrame> frame;
    size_t bytes;  // what it holds in memory (its arena's, if on one)
    std::unique_ptr<ExternalCharge> charge;  // null: no quota
  };
  // Keeps `frame` for a resume if max_bytes_ and the quota allow, evicting
  // the oldest frames for it.
  void KeepLocked(std::shared_ptr<const v1::ServerFrame> frame, size_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EvictFrontLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The held Acks merged into one frame, emptied (null when none).
  std::shared_ptr<const v1::ServerFrame> TakeHeldLocked()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forwards `first` then `second` (either may be null) to `sink`.
  void Forward(const std::shared_ptr<FrameSink>& sink,
               std::shared_ptr<const v1::ServerFrame> first,
               std::shared_ptr<const v1::ServerFrame> second);

  std::deque<Buffered> buffer_ ABSL_GUARDED_BY(mu_);
  std::thread::id holder_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<const v1::ServerFrame>> held_
      ABSL_GUARDED_BY(mu_);
  uint64_t held_since_ns_ ABSL_GUARDED_BY(mu_) = 0;
  // The last_seq of the last Ack forwarded (held ones cover seqs after it).
  uint64_t forwarded_ack_seq_ ABSL_GUARDED_BY(mu_) = 0;
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

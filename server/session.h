// One client session: an ordered executor over a bounded command queue.
//
// The transport submits batches without blocking; the session's own thread
// applies them in order through its CommandRunner and sends replies to the
// FrameSink. The one exception: a cheap batch with a sync point that finds
// the session idle runs on the submitting thread before Submit returns, in
// the same order (Note [Inline batches], command_inline.cc; the caller says
// whether it may). When the queue is deeper than `max_queued_batches`, or its
// parsed batches hold more than `max_queued_bytes`, the transport stops
// reading from the client until OnDrain fires (backpressure instead of
// unbounded memory). Thread-safe: Submit/Close/Kill/Info may be
// called from any thread.
#ifndef TENSORD_SERVER_SESSION_H_
#define TENSORD_SERVER_SESSION_H_

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "google/protobuf/arena.h"
#include "proto/admin.pb.h"
#include "runtime/core/mutex.h"
#include "server/bulk_socket.h"
#include "server/command_ring.h"
#include "server/command_runner.h"
#include "server/external_charge.h"
#include "server/session_outbox.h"

namespace tensord {

struct SessionParams {
  std::string id;
  std::string resume_secret;
  uint64_t number = 0;  // the allocator's session id
  std::string user;
  std::string client_name;
  std::string peer;
  DeviceRegistry* devices = nullptr;
  size_t chunk_bytes = 1 << 20;
  size_t max_queued_batches = 256;
  size_t max_queued_bytes = 32 << 20;
  size_t replay_bytes = 64 << 20;  // Note [Resume]
  // Same-host region's budget (shm_transfer.h; its ring's bound); 0: none.
  size_t shm_bytes = 0;
  // Cap on the session's shared buffers (shared_buffers.h); 0: off.
  size_t shared_buffer_bytes = 0;
  bool graph_replay = false;  // Note [Graph replay] (--cuda_graph_replay)
  // The user's memory quota per device when the session opened (0: none);
  // a resume's Welcome carries the quota of that moment.
  uint64_t quota_bytes = 0;
  // Cross-memory attach (server/cma.h): offered (a ticket in the Welcome,
  // a client process binds it). Needs the region.
  bool cma = false;
  // The region's command ring (server/command_ring.h): its bytes (0: none;
  // needs the region) and how long its reader spins before it sleeps.
  size_t ring_bytes = 0;
  int ring_spin_us = 0;
  // The bulk socket's one-time token (server/bulk_socket.h; empty: none) and
  // how long a transfer on it waits for the peer to move a byte.
  // `bulk_lanes`: how many connections the token admits.
  std::string bulk_token;
  absl::Duration bulk_stall = absl::Seconds(30);
  uint32_t bulk_lanes = 1;
  // Hello.packed_acks: plain created handles go in Ack.packed_created.
  bool packed_acks = false;
  // Note [Daemon counters]: the daemon's and the user's (null: not counted).
  DaemonCounters* counters = nullptr;
  UserCounters* user_counters = nullptr;
};

class Session {
 public:
  explicit Session(SessionParams params);
  // Waits for the executor to finish (call Close or Kill first).
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Queues a batch; returns false when the queue is now over its bound, in
  // which case the caller should pause reading until `on_drain` runs.
  // `may_run_inline` as below.
  bool Submit(v1::Batch batch, bool may_run_inline = false);
  // The same for a batch parsed on `arena` (the transport parses each frame
  // on its own arena: one allocation instead of one per command and field);
  // the arena is freed once the batch has run. With `may_run_inline` (the
  // transport's outbound queue is short, so replies cannot block), a cheap
  // batch reaching an idle executor runs on the calling thread before this
  // returns (Note [Inline batches], command_inline.cc).
  bool Submit(std::unique_ptr<google::protobuf::Arena> arena, v1::Batch* batch,
              bool may_run_inline = false);
  // Runs (on the executor thread) when a full queue has drained to half.
  void SetOnDrain(std::function<void()> on_drain);
  // No more batches: run what is queued, release every handle, end the sink.
  // With a command ring, what the client published in it is read first.
  void Close(absl::Status status = absl::OkStatus());
  // The batch whose last command seq is `seq` came on the stream and was
  // submitted: the command ring's ordering word (CommandRing).
  void NoteStreamBatch(uint64_t seq) {
    if (ring_ != nullptr) ring_->NoteStreamBatch(seq);
  }
  // Ends the session now: queued batches are dropped, handles released.
  void Kill(absl::Status reason);
  // Blocks until the executor has released everything and ended the sink.
  void WaitDone();
  // Blocks until nothing is queued and no batch is running (tests: the next
  // Submit then finds the executor idle, Note [Inline batches]).
  void WaitUntilIdle();

  // Streams (Note [Resume] in session_outbox.h). Attach sends `welcome`,
  // then the replies after `received_seq`; the session counts as attached.
  absl::Status Attach(std::shared_ptr<FrameSink> sink, uint64_t received_seq,
                      v1::ServerFrame welcome);
  // The stream `sink` dropped: replies are buffered, commands keep running.
  // False if another stream is attached by now.
  bool Detach(const FrameSink* sink);
  bool detached() const;
  // Detaches the current stream, whichever it is (see SessionOutbox).
  void DetachAny();
  bool AttachedTo(const FrameSink* sink) { return outbox_.AttachedTo(sink); }
  bool ending() const;  // Close/Kill was called
  // The last command seq applied (commands at or below it are skipped).
  uint64_t applied_seq() const { return applied_seq_.load(); }

  const SessionParams& params() const { return params_; }
  // The session's shared-memory region, or null (none asked for, or it
  // could not be made: the client then uses the stream).
  const ShmRegion* shm() const { return shm_.get(); }
  // Its cross-memory attach peer (Welcome.cma), or null.
  CmaPeer* cma() const { return cma_.get(); }
  // Its bulk socket's channel (Welcome.bulk_token), or null.
  const std::shared_ptr<BulkChannel>& bulk() const { return bulk_; }
  // Whether the session reads a command ring.
  bool has_ring() const { return ring_ != nullptr; }
  v1::SessionInfo Info() const;
  // The session's op profiler (thread-safe): Admin.ProfileSession.
  OpProfiler& profiler() { return runner_.profiler(); }

 private:
  void ExecutorLoop();
  // Applies one dequeued batch (skipping commands already applied); the
  // caller holds the executor's role.
  void RunQueued(v1::Batch& batch, uint64_t arrived_ns);
  // Note [Inline batches]: runs `batch` here if the executor is idle,
  // nothing is queued and the batch is cheap; false otherwise.
  bool TryRunInline(v1::Batch* batch, uint64_t arrived_ns);
  // Close without the ring's drain (the ring's `drained` hook, or no ring).
  void CloseQueue(absl::Status status);
  // The command ring's hooks (CommandRing::Hooks).
  CommandRing::Hooks RingHooks();

  const SessionParams params_;
  const absl::Time created_ = absl::Now();
  SessionOutbox outbox_;
  // The region's bytes charged to the user's quota (null: no region).
  std::unique_ptr<ExternalCharge> shm_charge_;
  const std::unique_ptr<ShmRegion> shm_;     // before runner_, which uses it
  const std::shared_ptr<CmaPeer> cma_;       // likewise; the binder too
  const std::shared_ptr<BulkChannel> bulk_;  // likewise; the listener too
  CommandRunner runner_;  // used by the holder of the executor's role only
  std::atomic<uint64_t> applied_seq_{0};

  mutable Mutex mu_;
  struct Queued {
    std::unique_ptr<google::protobuf::Arena> arena;  // null: `owned`
    v1::Batch* batch = nullptr;                      // on `arena`, or *owned
    std::unique_ptr<v1::Batch> owned;
    uint64_t arrived_ns = 0;  // PhaseClockNs at Submit: the profiler's wait
    size_t bytes = 0;         // memory the parsed batch holds
  };
  // Submit of a parsed batch from the stream or (`from_ring`) the ring.
  bool SubmitParsed(std::unique_ptr<google::protobuf::Arena> arena,
                    v1::Batch* batch, bool may_run_inline, bool from_ring);
  // `from_ring`: over the bound, the ring's reader waits (ring_paused_);
  // the stream's reactor is paused (paused_, then on_drain) otherwise.
  bool Enqueue(Queued queued, bool from_ring = false);
  std::deque<Queued> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // sum of Queued::bytes
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;       // transport stopped reading
  bool ring_paused_ ABSL_GUARDED_BY(mu_) = false;  // the ring's reader waits
  bool ring_draining_ ABSL_GUARDED_BY(mu_) = false;  // Close waits for it
  absl::Status drain_status_ ABSL_GUARDED_BY(mu_);   // Close's, meanwhile
  // The executor's role (Note [Inline batches]): the executor thread holds it
  // while it runs a dequeued batch, a transport thread while it runs one
  // inline; the runner_ is used only by the holder.
  bool executor_busy_ ABSL_GUARDED_BY(mu_) = false;
  bool inline_running_ ABSL_GUARDED_BY(mu_) = false;
  bool detached_ ABSL_GUARDED_BY(mu_) = false;
  // A download finished (Note [Async downloads]): the executor sends it.
  bool downloads_finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
  std::function<void()> on_drain_ ABSL_GUARDED_BY(mu_);

  std::thread executor_;  // starts after every member above is ready
  // Made once everything else is (its reader submits at once); stopped and
  // joined first in ~Session.
  std::unique_ptr<CommandRing> ring_;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_SESSION_H_

// One tensord session: the gRPC stream, command batching, and the reader
// thread that turns ServerFrames into handle metadata (handles_), answers
// to requests (requests_) and sync results. Works in handles;
// client/tensor.h wraps them in Tensors.
//
// Threading. Every public method is thread-safe. Mutexes, always taken in
// this order:
//   a transport's own locks (client/transport.h), taken by a transfer
//                before it asks the session to queue its commands;
//   enqueue_mu_  held by a command producer for its whole operation, so a
//                producer's new handles are increasing in seq order and the
//                Puts of one upload are consecutive commands
//                (BeginUpload..EndUpload);
//   write_mu_    held around stream writes (one writer at a time); a flush
//                takes the pending batch under mu_ while holding write_mu_,
//                so frames leave in seq order;
//   mu_          guards all state below; never held across network I/O.
// Two threads are owned: the reader (blocks in stream Read, takes mu_) and
// the flusher (sends a non-empty batch `batch_delay` after its first
// command). Waiters block on mu_ conditions, never sleep.
//
// Releases (from Tensor destructors, any thread) only touch mu_: they queue
// the handle and the next flush appends one Release command, never between
// the Puts of an upload.
//
// Resume (docs/protocol.md "Resume"; session_resume.cc). Sent batches stay in
// replay_ (client/replay_log.h) until their Ack arrives. When the stream
// breaks with a transport error (UNAVAILABLE, CANCELLED), the reader thread
// reconnects with Hello{resume_session_id, resume_secret,
// resume_received_seq = acked_seq_}, skips the replayed frames it had already
// received, and the flusher resends the unacked batches after
// Welcome.resumed_applied_seq; waiters never notice. Until then Flush only
// queues into replay_. A failed resume becomes stream_error_ ("the tensord
// session could not be resumed: ...").
//
// Transfers (session_upload.cc): where a tensor's bytes travel is the
// transport's (client/transport.h), made once from the Welcome: local (the
// daemon's shared-memory region, shared buffers, cross-memory attach) or
// remote (stream chunks, the bulk socket). The session is its
// TransportHost: it queues the Puts and Gets the transport asks for.
#ifndef TENSORD_CLIENT_SESSION_H_
#define TENSORD_CLIENT_SESSION_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/chunking.h"
#include "client/command_batch.h"
#include "client/download.h"
#include "client/dtype.h"
#include "client/handle_table.h"
#include "client/options.h"
#include "client/replay_log.h"
#include "client/request_table.h"
#include "client/site.h"
#include "client/site_ids.h"
#include "client/stream_opener.h"
#include "client/transport.h"
#include "proto/tensord.pb.h"
#include "runtime/core/mutex.h"

namespace tensord {
inline namespace client {
namespace internal {

class Session final : public TransportHost {
 public:
  // Connects, sends Hello and waits for Welcome. A refused handshake is the
  // daemon's status (FAILED_PRECONDITION for a version mismatch,
  // UNAUTHENTICATED for a bad token); no daemon is UNAVAILABLE.
  static absl::StatusOr<std::shared_ptr<Session>> Open(
      const ClientOptions& options);

  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Sends what is pending, half-closes the stream and joins the threads.
  // Later calls fail with FAILED_PRECONDITION; releases are dropped (the
  // daemon releases every handle of a closed session). Idempotent.
  void Close();

  const v1::Welcome& welcome() const { return welcome_; }
  const std::string& address() const { return address_; }
  // How many times the session was resumed after its stream broke.
  int resumes() const;
  // Null when the catalog has no such op.
  const v1::OpSchema* FindOp(absl::string_view name) const;

  // Queues a Call of `op` creating `num_outputs` fresh handles, consecutive:
  // returns the first. `attrs` are already checked against the schema. A
  // known `site` goes by its session id after its first Call (Note [Site
  // ids] in server/call_sites.cc).
  absl::StatusOr<uint64_t> EnqueueCall(
      const v1::OpSchema& op, absl::Span<const uint64_t> inputs,
      const google::protobuf::Map<std::string, v1::AttrValue>& attrs,
      int num_outputs, const Site& site);

  // Queues the upload of `shape`-shaped C-contiguous `data` as Put chunks
  // and returns the new handle (meta known at once; `data` read only here).
  absl::StatusOr<uint64_t> EnqueueUpload(const void* data, DType dtype,
                                         const std::vector<int64_t>& shape,
                                         const std::string& device,
                                         bool requires_grad,
                                         const std::string& site,
                                         bool wrapped_number = false);

  absl::Status EnqueueOptions(const v1::SetOptions& options);
  // The grad mode last sent with SetOptions (the daemon starts with it on).
  bool grad_enabled() const;

  // Streams and events (docs/protocol.md "Streams and events";
  // session_streams.cc). SetStream makes `stream_id` the current stream (0:
  // the default one); RecordEvent/WaitEvent act on the current stream of the
  // session's default device. Errors of the daemon (an event never recorded)
  // come back from the next Sync. Batched: no round trip.
  absl::Status SetStream(uint32_t stream_id);
  uint32_t current_stream() const;
  absl::Status RecordEvent(uint64_t event);
  absl::Status WaitEvent(uint64_t event);
  // TF32 for float32 matmuls and convolutions on CUDA (off by default).
  absl::Status SetAllowTf32(bool allow);

  // Autograd commands (docs/protocol.md "Autograd"; session_autograd.cc).
  // Backward returns the handles it creates: one per input when `inputs` is
  // non-empty (autograd.grad), else none.
  absl::StatusOr<std::vector<uint64_t>> EnqueueBackward(
      const std::vector<uint64_t>& roots, const std::vector<uint64_t>& grads,
      bool retain_graph, bool create_graph, const std::vector<uint64_t>& inputs,
      bool allow_unused, const std::string& site);
  absl::Status EnqueueSetRequiresGrad(uint64_t handle, bool requires_grad,
                                      const std::string& site);
  // A new handle naming `handle`'s .grad (its meta says is_none for None).
  absl::StatusOr<uint64_t> EnqueueGetGrad(uint64_t handle);
  // grad = 0: None.
  absl::Status EnqueueSetGrad(uint64_t handle, uint64_t grad);
  // Records a client-side change of `handle`'s requires_grad in its meta.
  void NoteRequiresGrad(uint64_t handle, bool requires_grad);
  // Note [Deferred backward errors]: queues a host-only Sync nobody waits
  // for after a Backward; the next Download or Sync returns what it reports.
  absl::Status QueueCheck();

  // Blocking waits so far: each wait for a reply whose answer was not there
  // yet (each at least a round trip to a remote daemon). For tests and
  // benchmarks: a training step should wait once, for its loss read.
  int64_t waits() const ABSL_LOCKS_EXCLUDED(mu_);

  // Drops the client's reference to `handle` (batched). Never blocks on I/O.
  void QueueRelease(uint64_t handle) override;

  // Sends the pending batch now.
  absl::Status Flush() override;

  // Sync point: waits until every earlier command ran; returns the first op
  // error since the previous Sync (or a frame-level error seen since).
  absl::Status Sync();

  // Sync point: downloads `handle`'s values, or its poison status. With a
  // `target`, the bytes land there (HostTensor::bytes stays empty).
  absl::StatusOr<HostTensor> Download(uint64_t handle, const std::string& site,
                                      DownloadTarget target = {});

  // The session's transport (client/transport.h): what is in use, and
  // shared buffers (AllocateShared: one round trip; a null mapping where
  // the daemon's memory is not reachable from here).
  Transport& transport() const { return *transport_; }

  // The handle's meta; waits for its Ack only when not yet known.
  absl::StatusOr<HandleMeta> WaitMeta(uint64_t handle) override;
  // The handle's meta when already known (no wait); nullopt otherwise.
  std::optional<HandleMeta> KnownMeta(uint64_t handle) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  Session(const ClientOptions& options, std::shared_ptr<grpc::Channel> channel);
  absl::Status Handshake();
  // opener_.Open, the attempt in attempt_context_ for Close() to cancel.
  absl::StatusOr<StreamOpener::Opened> OpenStream(const v1::Hello& hello,
                                                  absl::Duration timeout);
  // Reader thread: reconnects and resumes after the stream broke with
  // `cause`, retrying within options_.resume_timeout. OK: the new stream is
  // installed and the unacked batches are resent.
  absl::Status Resume(const absl::Status& cause);
  // Installs the resumed stream and asks the flusher to resend.
  absl::Status Adopt(StreamOpener::Opened opened);
  // Flusher thread: writes the batches replay_ has to resend.
  void ResendUnacked();

  // Appends `command` (assigning its seq) to the pending batch, flushing
  // before and after as BatchPolicy says. `creates` are registered with the
  // command's seq; `known` (optional) is their meta when the client knows it.
  // `seq` (optional) receives the command's seq.
  absl::Status Append(v1::Command command, absl::Span<const uint64_t> creates,
                      const HandleMeta* known, uint64_t* seq = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(enqueue_mu_);
  // The same, with the command written in place into the pending batch by
  // `fill` (no separate message: Note [Client frame arenas]); `size` bounds
  // its encoded size from above. `pack`, when given, writes the command as
  // an entry of a packed run instead, used when the daemon reads them
  // (Note [Packed commands]).
  using PackFn = CommandBatch::PackFn;
  absl::Status AppendWith(size_t size,
                          absl::FunctionRef<void(v1::Command*)> fill,
                          absl::Span<const uint64_t> creates,
                          const HandleMeta* known, uint64_t* seq,
                          const PackFn* pack = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(enqueue_mu_);
  // AppendWith's append, the batch known to have room; true when the batch
  // should now be flushed.
  bool AppendLocked(size_t size, absl::FunctionRef<void(v1::Command*)> fill,
                    absl::Span<const uint64_t> creates, const HandleMeta* known,
                    uint64_t* seq, const PackFn* pack)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues a command answered under a fresh request id: adds a `kind`
  // request to requests_ (a download's bytes go to `target`), appends what
  // `fill` writes for that id, and forgets it when nothing could be queued.
  absl::StatusOr<uint64_t> EnqueueRequest(
      RequestTable::Kind kind, DownloadTarget target,
      absl::FunctionRef<void(uint64_t, v1::Command*)> fill)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(enqueue_mu_);
  // Fails with the session's error when it is closed or broken; otherwise
  // reserves `count` consecutive handles and returns the first, and fills an
  // empty meta->device with the session's default device.
  absl::StatusOr<uint64_t> ReserveHandles(int count, HandleMeta* meta = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CheckOpenLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // mu_.Await, counted in waits_ when `ready` does not hold already, or
  // always for a `round_trip` (the answer to a request just sent: whether it
  // arrived before the wait began is a race, not the program's doing).
  void AwaitLocked(const absl::Condition& ready, bool round_trip = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Deferred backward errors]: waits for the queued checks' answers
  // and forgets them; returns the first error they report (or the stream's
  // when it broke before they were answered).
  absl::Status TakeChecksLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // TransportHost (session_upload.cc).
  // BeginUpload holds enqueue_mu_ when it succeeds, until EndUpload.
  absl::StatusOr<uint64_t> BeginUpload(HandleMeta* meta) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS;
  absl::StatusOr<uint64_t> AppendPut(
      uint64_t handle, const v1::Put& first, const HandleMeta& meta,
      uint64_t offset, bool last, size_t inline_bytes,
      absl::FunctionRef<void(v1::Payload*)> payload) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(enqueue_mu_);
  absl::StatusOr<uint64_t> EndUpload(uint64_t handle,
                                     absl::Status status) override
      ABSL_UNLOCK_FUNCTION(enqueue_mu_);
  absl::StatusOr<uint64_t> SendRequest(
      absl::FunctionRef<void(uint64_t, v1::Command*)> fill,
      DownloadTarget target, bool flush) override
      ABSL_LOCKS_EXCLUDED(enqueue_mu_);
  PendingDownload AwaitAnswer(uint64_t id) override ABSL_LOCKS_EXCLUDED(mu_);
  bool AnswerPending(uint64_t id) override ABSL_LOCKS_EXCLUDED(mu_);
  void DropAnswer(uint64_t id) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status AwaitAck(uint64_t seq) override ABSL_LOCKS_EXCLUDED(mu_);
  bool DaemonCaughtUp() override ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<uint64_t> KnownBytes(uint64_t handle) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseShared(uint64_t region) override;

  void ReadLoop();
  void FlushLoop();
  // Applies a received frame; takes mu_. `payload`: the bytes of a Data
  // frame decoded in place (client/data_frame.h), else frame.data().data().
  void HandleFrame(const v1::ServerFrame& frame,
                   absl::Span<const absl::string_view> payload = {});

  const ClientOptions options_;  // resolved
  const std::string address_;
  BatchPolicy policy_;  // max_frame_bytes set from Welcome, then fixed
  const absl::Duration batch_delay_;
  const StreamOpener opener_;  // holds the channel: before the calls below
  // The current call. Replaced only by the reader thread (a resume), under
  // write_mu_ and mu_; the reader reads it without locks.
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<StreamOpener::Stream> stream_;
  v1::Welcome welcome_;                             // immutable after Open
  absl::flat_hash_map<std::string, int> op_index_;  // name -> welcome_.ops
  bool started_ = false;  // threads running; set once in Open
  // Made once in Handshake; outlived by nothing it calls back.
  std::unique_ptr<Transport> transport_;
  Mutex enqueue_mu_ ABSL_ACQUIRED_BEFORE(write_mu_);
  SiteIds site_ids_ ABSL_GUARDED_BY(enqueue_mu_);  // Note [Site ids]
  Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  bool writes_done_ ABSL_GUARDED_BY(write_mu_) = false;
  bool stream_live_ ABSL_GUARDED_BY(write_mu_) = true;  // not yet Finish()ed

  mutable Mutex mu_;
  CondVar flush_cv_;  // Note [Flusher waits] in session.cc
  CommandBatch batch_ ABSL_GUARDED_BY(mu_);           // not yet sent
  bool flusher_parked_ ABSL_GUARDED_BY(mu_) = false;  // Note [Flusher waits]
  std::string default_device_ ABSL_GUARDED_BY(mu_);   // for Put metas
  bool grad_enabled_ ABSL_GUARDED_BY(mu_) = true;
  uint32_t stream_id_ ABSL_GUARDED_BY(mu_) = 0;  // SetOptions.stream as sent
  uint64_t sent_seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t acked_seq_ ABSL_GUARDED_BY(mu_) = 0;
  HandleTable handles_ ABSL_GUARDED_BY(mu_);
  RequestTable requests_ ABSL_GUARDED_BY(mu_);
  // Request ids of the checks queued after Backwards, oldest first.
  std::vector<uint64_t> checks_ ABSL_GUARDED_BY(mu_);
  int64_t waits_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status frame_error_ ABSL_GUARDED_BY(mu_);   // Error{request_id=0}
  absl::Status stream_error_ ABSL_GUARDED_BY(mu_);  // non-OK: stream is over
  bool closed_ ABSL_GUARDED_BY(mu_) = false;        // Close() started
  bool closing_ ABSL_GUARDED_BY(mu_) = false;       // threads should stop
  bool reader_done_ ABSL_GUARDED_BY(mu_) = false;
  // Resume state (see the top comment).
  bool resuming_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* attempt_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  ReplayLog replay_ ABSL_GUARDED_BY(mu_);

  std::thread reader_;
  std::thread flusher_;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_SESSION_H_

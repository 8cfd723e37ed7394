// One tensord session: the gRPC stream, command batching, and the reader
// thread that turns ServerFrames into handle metadata, downloads and sync
// results. Works in handles; client/tensor.h wraps them in Tensors.
//
// Threading. Every public method is thread-safe. Three mutexes, always taken
// in this order:
//   enqueue_mu_  held by a command producer for its whole operation, so a
//                producer's new handles are increasing in seq order and the
//                Put chunks of one upload are consecutive commands;
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
// the chunks of an upload.
//
// Resume (docs/protocol.md "Resume"; session_resume.cc). Sent batches stay in
// unacked_ until their Ack arrives. When the stream breaks with a transport
// error (UNAVAILABLE, CANCELLED), the reader thread reconnects with
// Hello{resume_session_id, resume_secret, resume_received_seq = acked_seq_},
// skips the replayed frames it had already received (received_since_ack_),
// and the flusher resends the unacked batches after
// Welcome.resumed_applied_seq; waiters never notice. Until then Flush only
// queues into unacked_. A failed resume
// becomes stream_error_ ("the tensord session could not be resumed: ...").
//
// Same-host transfer (session_shm.cc; docs/protocol.md "Shared memory"):
// when the daemon's region could be mapped (shm_ non-null), uploads of
// kShmMinBytes or more and downloads put their bytes in its slots instead
// of the stream. One transfer at a time owns the slots: shm_mu_ is held for
// its whole duration and is taken before enqueue_mu_. A slot the client
// filled is rewritten only after the Put reading it was acknowledged, so
// unacked batches resent after a resume still find their bytes.
//
// Bulk socket (session_bulk.cc; docs/protocol.md "Bulk socket"): without a
// region, uploads and downloads of kBulkMinBytes or more move their bytes on
// a plain TCP connection beside the stream, when the daemon offers one.
// bulk_mu_ is held for a whole such transfer (its command and its bytes), so
// the socket's bytes follow the commands' order; taken before enqueue_mu_.
//
// Shared buffers (session_shared.cc; client/shared_buffer.h): the session
// keeps the address range of each live buffer (under mu_). An upload whose
// bytes lie in one, or a download whose destination does, is one Put or Get
// naming the buffer's region; the upload waits for its Put's Ack.
#ifndef TENSORD_CLIENT_SESSION_H_
#define TENSORD_CLIENT_SESSION_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/sync_stream.h>

#include <cstdint>
#include <deque>
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
#include "client/download.h"
#include "client/dtype.h"
#include "client/options.h"
#include "client/pending_frame.h"
#include "client/shm_mapping.h"
#include "client/site.h"
#include "proto/tensord.pb.h"
#include "runtime/core/mutex.h"

namespace tensord {
inline namespace client {
namespace internal {

// What the client knows about a handle.
struct HandleMeta {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  std::string device;
  bool requires_grad = false;
  absl::Status error;    // non-OK: the handle is poisoned
  bool is_none = false;  // names None (a .grad never set, an unused input)
  bool is_leaf = true;
  std::string grad_fn;  // e.g. "MulBackward0"; empty for leaves
};

// Where a download's bytes go: the caller's buffer, or (null data) a fresh
// HostTensor::bytes.
struct DownloadTarget {
  char* data = nullptr;
  size_t capacity = 0;
};

class Session {
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
  // ids] in server/command_runner.cc).
  absl::StatusOr<uint64_t> EnqueueCall(
      const v1::OpSchema& op, absl::Span<const uint64_t> inputs,
      const google::protobuf::Map<std::string, v1::AttrValue>& attrs,
      int num_outputs, const Site& site);

  // Queues the upload of `shape`-shaped C-contiguous `data` as Put chunks
  // and returns the new handle; the meta is known at once. `data` is only
  // read during the call.
  absl::StatusOr<uint64_t> EnqueueUpload(const void* data, DType dtype,
                                         const std::vector<int64_t>& shape,
                                         const std::string& device,
                                         bool requires_grad,
                                         const std::string& site);

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

  // Drops the client's reference to `handle` (batched). Never blocks on I/O.
  void QueueRelease(uint64_t handle);

  // Sends the pending batch now.
  absl::Status Flush();

  // Sync point: waits until every earlier command ran; returns the first op
  // error since the previous Sync (or a frame-level error seen since).
  absl::Status Sync();

  // Sync point: downloads `handle`'s values, or its poison status. With a
  // `target`, the bytes land there (HostTensor::bytes stays empty).
  absl::StatusOr<HostTensor> Download(uint64_t handle, const std::string& site,
                                      DownloadTarget target = {});

  // True when transfers go through the daemon's shared-memory region.
  bool shm_active() const { return shm_ != nullptr; }
  // Answers read from the region's mailbox (AwaitNotified) so far.
  uint64_t mailbox_answers() const { return mailbox_answers_.load(); }
  // A new shared buffer of `bytes` (AllocateShared; one round trip), mapped
  // and registered; a null `mapping` when this session has no shared memory
  // with the daemon. FreeShared unregisters it and queues its Release.
  struct SharedAllocation {
    uint64_t region = 0;
    std::unique_ptr<RegionMapping> mapping;
  };
  absl::StatusOr<SharedAllocation> AllocateShared(size_t bytes);
  void FreeShared(uint64_t region);
  // Transfers smaller than this use the stream (no gain, one more copy).
  static constexpr uint64_t kShmMinBytes = 256 << 10;
  // From this size an upload from, or a download into, plain memory goes by
  // cross-memory attach when it works (below it the Put's wait for its Ack
  // costs more than the copy it saves).
  static constexpr uint64_t kCmaMinBytes = 1 << 20;
  // True when such transfers go by cross-memory attach.
  bool cma_active() { return CmaUsable(); }
  // From this size, transfers without a region go on the bulk socket.
  static constexpr uint64_t kBulkMinBytes = 1 << 20;
  // True when such transfers go on the bulk socket (connects the first time).
  bool bulk_active() ABSL_LOCKS_EXCLUDED(bulk_mu_);

  // The handle's meta; waits for its Ack only when not yet known.
  absl::StatusOr<HandleMeta> WaitMeta(uint64_t handle);

 private:
  struct HandleState {
    uint64_t seq = 0;  // the command creating it; 0 until appended
    bool known = false;
    HandleMeta meta;
    // requires_grad set by this client (SetRequiresGrad) before the Ack came:
    // it wins over the Ack's value (-1: none).
    int8_t requires_grad_override = -1;
  };
  struct PendingDownload {
    DataAssembler assembler;
    bool done = false;
    absl::Status status;
    // A ranged shm Get's answer: its bytes are in the slot it names and are
    // copied out by the downloading thread, not the reader.
    bool shm = false;
    v1::Data shm_reply;
    // An AllocateShared's answer.
    bool shared = false;
    v1::SharedBuffer shared_reply;
  };
  // Where a shared buffer's bytes are: [begin, end) here, at `data_offset`
  // of region `region` on the daemon.
  struct SharedRange {
    uintptr_t begin = 0;
    uintptr_t end = 0;
    uint64_t region = 0;
    uint64_t data_offset = 0;
    // What Put/Get.shm_offset names for the bytes at `p`.
    uint64_t OffsetOf(const void* p) const {
      return data_offset + (reinterpret_cast<uintptr_t>(p) - begin);
    }
  };

  // Frames travel as raw byte buffers, serialised and parsed here rather
  // than by gRPC's protobuf glue: a Put chunk goes out without another copy
  // (Note [Aliased payloads], proto/frame_buffer.h) and a Data chunk's bytes
  // go straight to their download (Note [Data frames in place]).
  using Stream = grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;
  // A started Tensord.Session call that got its Welcome.
  struct OpenedStream {
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<Stream> stream;
    v1::Welcome welcome;
  };
  struct UnackedBatch {
    uint64_t last_seq = 0;
    std::shared_ptr<const v1::ClientFrame> frame;
  };
  // A frame received after the last Ack: what a resume's replay repeats.
  struct ReceivedFrame {
    uint64_t seq = 0;
    int kind = 0;
    uint64_t request_id = 0;
    uint64_t offset = 0;
  };

  Session(const ClientOptions& options, std::shared_ptr<grpc::Channel> channel);
  absl::Status Handshake();
  // Starts a call, sends `hello` and reads the Welcome within `timeout`
  // (session_resume.cc). Close() cancels an attempt in progress.
  absl::StatusOr<OpenedStream> OpenStream(const v1::Hello& hello,
                                          absl::Duration timeout);
  // Reader thread: reconnects and resumes after the stream broke with
  // `cause`, retrying within options_.resume_timeout. OK: the new stream is
  // installed and the unacked batches are resent.
  absl::Status Resume(const absl::Status& cause);
  // Installs the resumed stream and asks the flusher to resend.
  absl::Status Adopt(OpenedStream opened);
  // Flusher thread: writes the unacked batches after resend_after_.
  void ResendUnacked();
  static ReceivedFrame Describe(const v1::ServerFrame& frame);
  // Records handle `handle`'s metadata from an Ack: a TensorMeta
  // (`message`, which also carries error, is_none and grad_fn) or a packed
  // entry (`message` null; Note [Packed metas]).
  void SetMetaLocked(uint64_t handle, int wire_dtype,
                     absl::Span<const int64_t> shape, const std::string& device,
                     bool requires_grad, bool is_leaf,
                     const v1::TensorMeta* message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // True when `frame` is a replay of one already handled (then skipped).
  bool SkipReplayedLocked(const v1::ServerFrame& frame)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

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
  using PackFn = absl::FunctionRef<void(std::string*)>;
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
  // Queues a Get of `handle` under a new request id (its download
  // registered), `fill` adding the optional fields (shared-memory ranges).
  absl::StatusOr<uint64_t> EnqueueGetLocked(
      uint64_t handle, const std::string& site,
      absl::FunctionRef<void(v1::Get*)> fill, DownloadTarget target = {})
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(enqueue_mu_);
  // Queues a command answered under a fresh request id: registers
  // `(*pending)[id]` (then set up by `init`, under mu_), appends what `fill`
  // writes for that id, and unregisters it when nothing could be queued.
  template <typename Pending>
  absl::StatusOr<uint64_t> EnqueueRequest(
      absl::flat_hash_map<uint64_t, Pending>* pending,
      absl::FunctionRef<void(Pending&)> init,
      absl::FunctionRef<void(uint64_t, v1::Command*)> fill)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(enqueue_mu_);
  // Fails with the session's error when it is closed or broken; otherwise
  // reserves `count` consecutive handles and returns the first, and fills an
  // empty meta->device with the session's default device.
  absl::StatusOr<uint64_t> ReserveHandles(int count, HandleMeta* meta = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CheckOpenLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Appends the releases queued by destructors as one Release command.
  void MoveReleasesIntoBatchLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The shm paths (session_shm.cc). Upload: the Put chunks of an upload
  // whose handle and meta are already registered.
  absl::Status UploadShmChunks(const char* data, uint64_t total,
                               uint64_t handle, const v1::Put& first,
                               const HandleMeta& meta)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shm_mu_, enqueue_mu_);
  // `total`: the tensor's bytes when known (else the first answer says).
  absl::StatusOr<HostTensor> DownloadShm(uint64_t handle,
                                         const std::string& site,
                                         std::optional<uint64_t> total,
                                         DownloadTarget target);
  // Queues a ranged shm Get of `handle` into `slot`; returns its request id.
  // `notify`: the daemon also announces the answer in the region's mailbox
  // (proto/mailbox.h), for AwaitNotified; one such Get at a time (shm_mu_).
  absl::StatusOr<uint64_t> EnqueueShmGet(uint64_t handle,
                                         const std::string& site, int slot,
                                         uint64_t byte_offset,
                                         bool notify = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shm_mu_);
  // Waits for request `request_id`'s answer and forgets it.
  PendingDownload AwaitDownload(uint64_t request_id);
  // The same for the notify Get: wakes on the mailbox's futex, where the
  // daemon announces the answer before its frame goes out (so no gRPC or
  // reader thread stands between it and this one), or where the reader
  // stores a word of its own when the stream answered first, failed or
  // ended (WakeMailboxLocked).
  PendingDownload AwaitNotified(uint64_t request_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shm_mu_);
  void WakeMailboxLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Spins up to ClientOptions::sync_spin while `*word` is `seen`; true when
  // it changed.
  bool SpinWhile(const std::atomic<uint32_t>* word, uint32_t seen) const;
  // The shared-buffer paths (session_shared.cc): the buffer holding all of
  // [p, p + n), if any. Then, for bytes the daemon copies in place (a
  // shared buffer, or this process's memory by cross-memory attach): one
  // Put whose source `set_source` names, waiting for its Ack (the bytes are
  // copied then); one Get of the `total` bytes of `handle` (of `dtype`)
  // into `target`, which `set_destination` names.
  std::optional<SharedRange> FindShared(const void* p, size_t n) const;
  absl::StatusOr<uint64_t> UploadInPlace(
      const std::function<void(v1::Put*)>& set_source, v1::Put first,
      HandleMeta meta);
  // Their common start: a new handle and its one Put (the last) appended,
  // with `seq` set to the Put's seq; the handle.
  absl::StatusOr<uint64_t> AppendWholePut(
      const std::function<void(v1::Put*)>& set_source, v1::Put first,
      HandleMeta meta, uint64_t* seq) ABSL_LOCKS_EXCLUDED(enqueue_mu_);
  absl::StatusOr<HostTensor> DownloadInPlace(
      uint64_t handle, const std::string& site, DType dtype, uint64_t total,
      DownloadTarget target,
      const std::function<void(v1::Get*)>& set_destination);
  // Cross-memory attach (session_cma.cc; docs/protocol.md): whether the
  // daemon offered it (Welcome.cma) and a probe transfer of 4 bytes each
  // way worked (tried once, by the first transfer big enough for it).
  bool CmaUsable() ABSL_LOCKS_EXCLUDED(cma_mu_);
  // The bulk socket (session_bulk.cc): connected at the first use, when the
  // daemon offered one (Welcome.bulk_port); false once it failed.
  bool BulkUsableLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(bulk_mu_);
  // Whether to ask for one (Hello.bulk): a TCP address, not turned off.
  bool WantBulk() const;
  // An upload or download with its bytes on the bulk socket; nullopt when
  // the socket is not usable (the caller takes another path). A download
  // may still be answered on the stream (a device tensor).
  std::optional<absl::StatusOr<uint64_t>> UploadBulk(const char* data,
                                                     uint64_t total,
                                                     v1::Put first,
                                                     HandleMeta meta)
      ABSL_LOCKS_EXCLUDED(bulk_mu_);
  std::optional<absl::StatusOr<HostTensor>> DownloadBulk(
      uint64_t handle, const std::string& site, uint64_t total,
      DownloadTarget target) ABSL_LOCKS_EXCLUDED(bulk_mu_);
  // The byte size of `handle` once its Ack has come (0 when it is poisoned
  // or None: the stream reports those), without waiting; nullopt before.
  std::optional<uint64_t> KnownBytes(uint64_t handle) ABSL_LOCKS_EXCLUDED(mu_);
  // The byte size `meta` describes; nullopt when poisoned or None.
  static std::optional<uint64_t> HealthyBytes(const HandleMeta& meta);
  // After a failed transfer: the socket is closed and not used again.
  void DropBulkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(bulk_mu_);
  // Every command appended so far ran: acknowledged, or before a request
  // whose answer arrived (a moment's answer).
  bool DaemonCaughtUp() const ABSL_LOCKS_EXCLUDED(mu_);
  // Request `request_id` was answered: the daemon ran every command up to
  // its seq (DaemonCaughtUp).
  void NoteAnsweredLocked(uint64_t request_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

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
  std::shared_ptr<grpc::Channel> channel_;
  const grpc::internal::RpcMethod session_method_;  // Tensord.Session
  // The current call. Replaced only by the reader thread (a resume), under
  // write_mu_ and mu_; the reader reads it without locks.
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<Stream> stream_;
  v1::Welcome welcome_;                             // immutable after Open
  absl::flat_hash_map<std::string, int> op_index_;  // name -> welcome_.ops
  uint64_t chunk_bytes_ = 0;
  bool started_ = false;             // threads running; set once in Open
  std::unique_ptr<ShmMapping> shm_;  // set once in Open; null: the stream

  Mutex shm_mu_ ABSL_ACQUIRED_BEFORE(enqueue_mu_);
  // Cross-memory attach: the probe Hello.cma_probe_address names (the
  // region's nonce is copied there once mapped), and whether it works
  // (unknown until the first CmaUsable, which probes holding cma_mu_).
  std::unique_ptr<char[]> cma_probe_;
  uint64_t cma_pid_ = 0;  // Hello.cma_pid
  static constexpr size_t kCmaProbeBytes = 64;
  Mutex cma_mu_ ABSL_ACQUIRED_BEFORE(shm_mu_);
  Mutex bulk_mu_ ABSL_ACQUIRED_BEFORE(enqueue_mu_);
  enum class BulkState { kUnknown, kWorks, kOff };
  BulkState bulk_state_ ABSL_GUARDED_BY(bulk_mu_) = BulkState::kUnknown;
  int bulk_fd_ ABSL_GUARDED_BY(bulk_mu_) = -1;
  enum class CmaState { kUnknown, kWorks, kOff };
  CmaState cma_state_ ABSL_GUARDED_BY(cma_mu_) = CmaState::kUnknown;
  // Per slot, the seq of the last Put that reads it (0: none).
  std::vector<uint64_t> slot_seq_ ABSL_GUARDED_BY(shm_mu_);
  // The outstanding notify Get (0: none), and how many answers were taken
  // from the mailbox (tests).
  uint64_t notify_request_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> mailbox_answers_{0};
  Mutex enqueue_mu_ ABSL_ACQUIRED_BEFORE(write_mu_);
  // Call sites bound to ids on the daemon, by __builtin_FILE pointer and
  // line (Note [Site ids]).
  absl::flat_hash_map<std::pair<const char*, int>, uint32_t> site_ids_
      ABSL_GUARDED_BY(enqueue_mu_);
  Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  bool writes_done_ ABSL_GUARDED_BY(write_mu_) = false;
  bool stream_live_ ABSL_GUARDED_BY(write_mu_) = true;  // not yet Finish()ed

  mutable Mutex mu_;
  CondVar flush_cv_;  // Note [Flusher waits] in session.cc
  PendingFrame pending_ ABSL_GUARDED_BY(mu_);  // Note [Client frame arenas]
  size_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time first_pending_ ABSL_GUARDED_BY(mu_);
  bool flusher_parked_ ABSL_GUARDED_BY(mu_) = false;  // Note [Flusher waits]
  std::vector<uint64_t> pending_releases_ ABSL_GUARDED_BY(mu_);
  bool in_chunked_put_ ABSL_GUARDED_BY(mu_) = false;
  std::string default_device_ ABSL_GUARDED_BY(mu_);  // for Put metas
  bool grad_enabled_ ABSL_GUARDED_BY(mu_) = true;
  uint32_t stream_id_ ABSL_GUARDED_BY(mu_) = 0;  // SetOptions.stream as sent
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  // Calls and Releases go packed (Note [Packed commands]); set at Open.
  bool packed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_handle_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_request_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t sent_seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t acked_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // The command seq of each outstanding request, and the highest seq of a
  // request answered (the daemon ran everything up to it; its Ack may
  // still be on the way).
  absl::flat_hash_map<uint64_t, uint64_t> request_seq_ ABSL_GUARDED_BY(mu_);
  uint64_t answered_seq_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, HandleState> handles_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, PendingDownload> downloads_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::optional<absl::Status>> syncs_
      ABSL_GUARDED_BY(mu_);
  std::vector<SharedRange> shared_ ABSL_GUARDED_BY(mu_);  // live buffers
  absl::Status frame_error_ ABSL_GUARDED_BY(mu_);         // Error{request_id=0}
  absl::Status stream_error_ ABSL_GUARDED_BY(mu_);  // non-OK: stream is over
  bool closed_ ABSL_GUARDED_BY(mu_) = false;        // Close() started
  bool closing_ ABSL_GUARDED_BY(mu_) = false;       // threads should stop
  bool reader_done_ ABSL_GUARDED_BY(mu_) = false;
  // Resume state (see the top comment).
  bool resuming_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* attempt_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::deque<UnackedBatch> unacked_ ABSL_GUARDED_BY(mu_);
  std::vector<ReceivedFrame> received_since_ack_ ABSL_GUARDED_BY(mu_);
  std::deque<ReceivedFrame> replay_skip_ ABSL_GUARDED_BY(mu_);
  bool resend_pending_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t resend_after_ ABSL_GUARDED_BY(mu_) = 0;  // resumed_applied_seq
  int resumes_ ABSL_GUARDED_BY(mu_) = 0;

  std::thread reader_;
  std::thread flusher_;
};

template <typename Pending>
absl::StatusOr<uint64_t> Session::EnqueueRequest(
    absl::flat_hash_map<uint64_t, Pending>* pending,
    absl::FunctionRef<void(Pending&)> init,
    absl::FunctionRef<void(uint64_t, v1::Command*)> fill) {
  uint64_t request_id;
  {
    MutexLock lock(&mu_);
    absl::Status open = CheckOpenLocked();
    if (!open.ok()) return open;
    request_id = next_request_id_++;
    init((*pending)[request_id]);
  }
  v1::Command command;
  fill(request_id, &command);
  uint64_t seq = 0;
  absl::Status status = Append(std::move(command), {}, nullptr, &seq);
  MutexLock lock(&mu_);
  if (!status.ok()) {
    pending->erase(request_id);
    return status;
  }
  request_seq_[request_id] = seq;
  return request_id;
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_SESSION_H_

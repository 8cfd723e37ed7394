// Applies a session's commands in order: the heart of the session core.
//
// Owns the session's handle table, random generator and options.
// Thread-compatible: it runs on whichever thread holds the session's executor
// role, one at a time (the executor, or a transport thread running a cheap
// batch inline: Note [Inline batches]); it never blocks on the network
// except through FrameSink::Send's flow control.
#ifndef TENSORD_SERVER_COMMAND_RUNNER_H_
#define TENSORD_SERVER_COMMAND_RUNNER_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "proto/tensord.pb.h"
#include "runtime/autograd/recorder.h"
#include "runtime/generator.h"
#include "runtime/ops/op_def.h"
#include "server/bulk_socket.h"
#include "server/call_sites.h"
#include "server/call_view.h"
#include "server/cma.h"
#include "server/daemon_counters.h"
#include "server/fallback_counts.h"
#include "server/frame_sink.h"
#include "server/graph_replay/step_replay.h"
#include "server/handle_table.h"
#include "server/kept_errors.h"
#include "server/pending_downloads.h"
#include "server/session_profiler.h"
#include "server/shared_buffers.h"
#include "server/shm_transfer.h"

namespace tensord {

// Per-session caps on client-chosen stream and event ids (a hostile client
// must not make the daemon create streams without bound).
inline constexpr size_t kMaxSessionStreams = 64;  // besides the default one
inline constexpr size_t kMaxSessionEvents = 4096;

struct RunnerConfig {
  uint64_t session = 0;
  DeviceRegistry* devices = nullptr;
  size_t chunk_bytes = 1 << 20;
  const ShmRegion* shm = nullptr;  // the session's region, if negotiated
  size_t shared_buffer_bytes = 0;  // cap on its shared buffers (0: off)
  CmaPeer* cma = nullptr;  // cross-memory attach to the client, if negotiated
  BulkChannel* bulk = nullptr;  // the bulk socket, if negotiated
  bool packed_acks = false;     // Note [Packed metas] (Hello.packed_acks)
  // Note [Daemon counters]: the daemon's and the session's user's (both
  // null in tests that count nothing).
  DaemonCounters* counters = nullptr;
  UserCounters* user_counters = nullptr;
  // Note [Graph replay] (--cuda_graph_replay): recognise repeated steps.
  bool graph_replay = false;
};

class CommandRunner {
 public:
  CommandRunner(RunnerConfig config, FrameSink* sink);
  ~CommandRunner();

  // Runs every command of `batch`, then sends one Ack for it. `arrived_ns`
  // (PhaseClockNs) is when the transport queued it: the profiler's wait.
  // Commands with seqs up to `applied_seq` were applied before (a resent
  // batch): skipped, including the first ones of a packed run.
  void RunBatch(const v1::Batch& batch, uint64_t arrived_ns = 0,
                uint64_t applied_seq = 0);
  // Note [Inline batches] (command_inline.cc): whether `batch` is cheap
  // enough to run on a transport thread. Reads the handle table: call it
  // only while holding the executor's role, as for RunBatch.
  bool CheapToRunInline(const v1::Batch& batch);
  // No batch of more commands is cheap, nor one without a Get or Sync.
  static constexpr int kInlineMaxCommands = 16;
  static bool HasSyncPoint(const v1::Batch& batch);
  // Releases every handle (session end), after sending the data of every
  // download still in flight.
  void ReleaseAll();
  // Note [Async downloads]: sends the data of downloads whose copy finished
  // since the last call (the executor calls it between batches; RunBatch
  // also does between commands). `wake` runs, from a device's completion
  // thread, when one finishes: it must only signal the executor.
  void RunFinishedDownloads() { downloads_.RunFinished(); }
  void SetDownloadWake(std::function<void()> wake) {
    downloads_.SetWake(std::move(wake));
  }

  size_t live_handles() const { return live_handles_.load(); }
  uint64_t ops_run() const { return ops_run_.load(); }
  // Thread-safe, as the two above: what the session's shared buffers hold.
  SharedBufferUsage shared_buffer_usage() const { return shared_.usage(); }
  // Thread-safe: Admin turns profiling on and fetches records from here.
  OpProfiler& profiler() { return profiler_; }
  // Thread-safe: the client's fallbacks (Note [Client fallbacks]) so far.
  const FallbackCounts& fallbacks() const { return fallbacks_; }
  // Note [Graph replay]: null unless RunnerConfig::graph_replay.
  const StepReplay* graph_replay() const { return replay_.get(); }

 private:
  // An upload in progress: chunks of one handle arrive as consecutive Puts.
  struct PendingPut {
    uint64_t handle = 0;
    Tensor tensor;  // undefined once the upload failed: chunks are skipped
    size_t received = 0;
    bool requires_grad = false;
    bool wrapped_number = false;
    std::string site;
  };

  void Run(const v1::Command& cmd, v1::Ack* ack);
  void RunCall(const CallView& call, v1::Ack* ack);
  // A packed run (Note [Packed commands]; command_packed.cc): its entries
  // in order, each as the Call or Release it stands for.
  void RunPacked(const v1::Command& cmd, v1::Ack* ack);
  void RunPut(const v1::Put& put, v1::Ack* ack);
  void RunGet(const v1::Get& get);
  // A Get's Data frames: `total` bytes in chunks, `meta` on the first.
  void SendData(uint64_t request_id, const v1::TensorMeta& meta,
                const char* bytes, size_t total);
  void RunSync(const v1::Sync& sync);
  void RunOptions(const v1::SetOptions& options);
  // Autograd commands (command_autograd.cc).
  void RunBackward(const v1::Backward& backward, v1::Ack* ack);
  void RunSetRequiresGrad(const v1::SetRequiresGrad& cmd);
  void RunGetGrad(const v1::GetGrad& cmd, v1::Ack* ack);
  void RunSetGrad(const v1::SetGrad& cmd);
  // Same-host transfer (command_shm.cc): a Put's bytes, from
  // `payload.data` or a region (empty for cross-memory attach and the bulk
  // socket, which ReadCmaForPut and ReadBulkForPut read); a ranged Get
  // answered through a region or by cross-memory attach; the region a
  // RegionSpan names (0: the session's, else a shared buffer),
  // INVALID_ARGUMENT naming `what` when there is none; shared buffers made
  // and freed.
  absl::StatusOr<absl::string_view> PutPayload(const v1::Put& put) const;
  void RunShmGet(const v1::Get& get);
  // The region is shared: a device download holds it until it wrote.
  absl::StatusOr<std::shared_ptr<const ShmRegion>> Region(
      uint64_t id, absl::string_view what) const;
  void RunAllocateShared(const v1::AllocateShared& cmd);
  // Reads bytes [offset, offset + n) of the dense tensor `t` for a Get and
  // calls `then(status, bytes)` on the executor with them: at once for CPU
  // memory (read in place) or a device without staging memory (a waiting
  // copy), else once an asynchronous copy into pinned staging memory on the
  // session's stream has finished, while the executor goes on with later
  // commands (Note [Async downloads]; command_download.cc).
  using ReadDone = std::function<void(const absl::Status&, const char*)>;
  void ReadForGet(const Tensor& t, size_t offset, size_t n, ReadDone then);
  // Note [Async uploads] (runtime/device.h; command_upload.cc): where an
  // upload to `device` is allocated (the session's current stream; CPU: no
  // stream), and the write of one chunk of it at byte `offset` of the dense
  // tensor `t`: in place for CPU memory, else through a pinned staging
  // buffer on `t`'s stream, returning once the copy is queued.
  absl::StatusOr<AllocContext> UploadContext(Device* device);
  absl::Status WriteForPut(const Tensor& t, size_t offset,
                           absl::string_view data);
  // The same for a Put by cross-memory attach (server/cma.h): read straight
  // into CPU memory, else into a host buffer and then as WriteForPut.
  absl::Status ReadCmaForPut(const v1::Put& put, const Tensor& t,
                             size_t offset);
  // The same for a Put whose bytes follow on the bulk socket
  // (server/bulk_socket.h).
  absl::Status ReadBulkForPut(const v1::Put& put, const Tensor& t,
                              size_t offset);
  // A Get answered on the bulk socket: one Data{payload.bulk} on the stream,
  // then the bytes of the CPU tensor `t` on the socket.
  void SendBulkData(uint64_t request_id, const v1::TensorMeta& meta,
                    const Tensor& t, const std::string& site, uint32_t lanes);
  // Profiling (command_profile.cc): a timed Call (`call`) or Backward,
  // GetProfile.
  void RunProfiled(const CallView* call, const v1::Backward* backward,
                   v1::Ack* ack);
  void RunGetProfile(const v1::GetProfile& get);
  // Note [Client fallbacks]: counted for the session, its profiler and its
  // user (command_profile.cc).
  void RunNoteFallbacks(const v1::NoteFallbacks& note);
  // Note [Session stats]: this session's own memory on a device
  // (command_memory.cc).
  void RunGetMemoryStats(const v1::GetMemoryStats& get);
  // Answers request `request_id` with Error{request_id} (a request the
  // client waits for by id, whose failure poisons no handle).
  void ReplyError(uint64_t request_id, const absl::Status& status,
                  const std::string& what);
  // Streams and events (command_streams.cc; Note [Session streams]).
  void RunSetStream(uint32_t stream_id);
  void RunRecordEvent(const v1::RecordEvent& cmd);
  void RunWaitEvent(const v1::WaitEvent& cmd);
  // OK when `stream_id` may be used (within the session's stream cap);
  // remembers it.
  absl::Status UseStreamId(uint32_t stream_id);
  // Forgets event `id` (Release.events; unknown ids are ignored).
  void ReleaseEvent(uint64_t id);
  // The device a RecordEvent/WaitEvent names (empty: the default device).
  absl::StatusOr<Device*> EventDevice(const std::string& name) const;
  // The call site a Call names, and a site sent as text (CallSites).
  using SiteText = CallSites::SiteText;
  absl::StatusOr<SiteText> CallSite(const CallView& call) {
    return sites_.Resolve(call.site_id, *call.site);
  }
  SiteText InlineSite(const std::string& text) { return sites_.Inline(text); }
  // A command over a limit of server/wire_limits.h: a frame error, and a
  // Call's outputs poisoned with it.
  void RejectCommand(const v1::Command& cmd, const absl::Status& status,
                     v1::Ack* ack);
  // Checks that `ids` may name new handles (non-zero, strictly increasing);
  // reports a frame error naming `what` otherwise.
  bool CheckNewOutputs(absl::Span<const uint64_t> ids, const std::string& what,
                       const std::string& site);
  // A live tensor for `id`: NOT_FOUND, the poisoning status, or an error for
  // a None handle.
  absl::StatusOr<Tensor> FindTensor(
      uint64_t id, std::shared_ptr<const v1::Status>* poisoned);
  OpContext MakeContext();
  // Finishes a pending upload that was interrupted by another command.
  void AbortPendingPut(v1::Ack* ack);

  // Stores a created handle and lists it in the Ack (Note [Packed metas]:
  // packed when the client reads them and it is a plain tensor).
  void Create(uint64_t id, HandleEntry entry, v1::Ack* ack);
  // `device`'s index in the registry's list (Welcome.devices' order).
  uint32_t DeviceIndex(const Device* device) const;
  // Records an op failure for the next SyncDone (and counts it).
  void NoteError(const v1::Status& status);
  // Note [Daemon counters]: `bytes` moved on `path`.
  void CountTransfer(TransferPath path, TransferDirection direction,
                     uint64_t bytes) {
    if (config_.counters != nullptr) {
      config_.counters->CountTransfer(path, direction, bytes);
    }
  }
  // Reports an error that has no handle to live in (bad output ids, bad
  // frames): recorded for Sync and sent as Error{request_id 0}.
  void ReportFrameError(const absl::Status& status, const std::string& what,
                        const std::string& site);

  RunnerConfig config_;
  FrameSink* sink_;
  // Note [Metadata charge]: handles and kept errors past a free allowance
  // are charged to the user's quota; before handles_ (which uses it).
  std::shared_ptr<MetadataCharge> metadata_;
  HandleTable handles_;
  KeptErrors errors_;  // Note [Kept errors]
  CallSites sites_;    // Note [Site ids]
  // Error text put in full in the Ack being built (kMaxAckErrorBytes).
  size_t ack_error_bytes_ = 0;
  Generator generator_;
  Device* default_device_;
  bool grad_enabled_ = true;
  bool allow_tf32_ = false;  // SetOptions.allow_tf32 (OpContext::allow_tf32)
  std::optional<DType> autocast_;  // SetOptions.autocast (Note [Autocast])
  // The current stream (SetOptions.stream; 0: the default stream), the
  // extra stream ids used so far, and each recorded event's device.
  uint32_t stream_id_ = 0;
  absl::flat_hash_set<uint32_t> stream_ids_;
  absl::flat_hash_map<uint64_t, Device*> events_;
  GraphRecorder recorder_;  // Note [Recording]; used while grad mode is on
  OpProfiler profiler_;
  FallbackCounts fallbacks_;  // Note [Client fallbacks]; thread-safe itself
  uint64_t batch_arrived_ns_ = 0;          // of the batch being run
  uint64_t applied_seq_ = 0;               // of the batch being run
  OpPhases* phases_ = nullptr;             // of the command being profiled
  std::optional<v1::Status> first_error_;  // since the last Sync
  std::unique_ptr<PendingPut> pending_put_;
  PendingDownloads downloads_;  // Note [Async downloads]
  SharedBuffers shared_;
  std::unique_ptr<StepReplay> replay_;  // Note [Graph replay]; after handles_
  std::atomic<size_t> live_handles_{0};
  std::atomic<uint64_t> ops_run_{0};
};

}  // namespace tensord

#endif  // TENSORD_SERVER_COMMAND_RUNNER_H_

// How a C++ client session moves tensor bytes (issue 27; docs/clients.md
// "Transports"): one narrow interface, Transport, with exactly two
// implementations chosen once from the Welcome and the options
// (Transport::Make):
//   - LocalTransport (client/local_transport.h): the daemon is on this host
//     and its shared-memory region is mapped: shared buffers (the
//     transport's staging buffer among them), cross-memory attach, the
//     mailbox;
//   - RemoteTransport (client/remote_transport.h): anything else: the
//     stream's 1 MiB chunks, and the bulk socket's lanes when the daemon
//     offers them.
// Commands (batches, Acks, answers) go on the session's gRPC stream either
// way (client/session.h); a transport only decides where an upload's or a
// download's bytes travel and asks its session, through TransportHost, to
// queue the Puts and Gets that say so. The wire is docs/protocol.md (one
// Payload oneof: Note [Payloads]).
//
// Ownership: a Session owns its Transport and is its TransportHost (it
// outlives the transport). Thread safety: every method is thread-safe; a
// transport's own lock is taken before the session's locks (TransportHost
// methods take those), never while one of them is held, except Answered.
#ifndef TENSORD_CLIENT_TRANSPORT_H_
#define TENSORD_CLIENT_TRANSPORT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/download.h"
#include "client/handle_table.h"
#include "client/options.h"
#include "client/request_table.h"
#include "client/shared_ranges.h"
#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {
namespace internal {

// What a transport asks of its session (implemented by Session).
class TransportHost {
 public:
  // One upload's Puts, consecutive in the session's queue (no other
  // command, no Release between them). BeginUpload reserves the new handle
  // (filling an empty meta->device) and holds the queue; AppendPut appends
  // the upload's next Put, at `offset`, `last` or not, its payload written by
  // `payload` (`inline_bytes` of them in the message); the first Put carries
  // `first`'s fields and creates the handle with `meta`. Returns the Put's
  // seq. EndUpload releases the queue; a failed upload's handle is forgotten.
  // Returns the handle, or `status`.
  virtual absl::StatusOr<uint64_t> BeginUpload(HandleMeta* meta) = 0;
  virtual absl::StatusOr<uint64_t> AppendPut(
      uint64_t handle, const v1::Put& first, const HandleMeta& meta,
      uint64_t offset, bool last, size_t inline_bytes,
      absl::FunctionRef<void(v1::Payload*)> payload) = 0;
  virtual absl::StatusOr<uint64_t> EndUpload(uint64_t handle,
                                             absl::Status status) = 0;

  // Queues a command answered under a fresh request id (a Get, an
  // AllocateShared: what `fill` writes for that id), its bytes, if on the
  // stream, going to `target`; `flush`: sends the batch now. The id.
  virtual absl::StatusOr<uint64_t> SendRequest(
      absl::FunctionRef<void(uint64_t, v1::Command*)> fill,
      DownloadTarget target, bool flush) = 0;
  // Waits for request `id`'s answer and forgets it (the session's error
  // when it ended first).
  virtual PendingDownload AwaitAnswer(uint64_t id) = 0;
  // True while request `id` is unanswered and the session is up.
  virtual bool AnswerPending(uint64_t id) = 0;
  // Forgets request `id` (answered elsewhere: the region's mailbox).
  virtual void DropAnswer(uint64_t id) = 0;

  virtual absl::Status Flush() = 0;
  // Waits until command `seq` was acknowledged; the session's error when it
  // ended first.
  virtual absl::Status AwaitAck(uint64_t seq) = 0;
  // Every command appended so far ran (Ack or a later answer).
  virtual bool DaemonCaughtUp() = 0;
  // A handle's size in bytes when its Ack came (0: poisoned or None), no
  // wait; and its meta, waiting for the Ack when not yet known.
  virtual std::optional<uint64_t> KnownBytes(uint64_t handle) = 0;
  virtual absl::StatusOr<HandleMeta> WaitMeta(uint64_t handle) = 0;
  virtual void QueueRelease(uint64_t handle) = 0;
  // Queues the release of shared buffer `region` (batched).
  virtual void ReleaseShared(uint64_t region) = 0;

 protected:
  ~TransportHost() = default;
};

class Transport {
 public:
  // Local when the Welcome offers a region and it maps here, else remote.
  static std::unique_ptr<Transport> Make(const ClientOptions& options,
                                         const v1::Welcome& welcome,
                                         TransportHost* host);
  // What a Hello asks for (Hello.shm_transfer, Hello.bulk).
  static void FillHello(const ClientOptions& options, v1::Hello* hello);

  virtual ~Transport() = default;

  // Uploads `total` bytes at `data` as a new handle (`first`: the Put's
  // fields besides handle, offset, last and payload). `data` may be reused
  // once this returns.
  virtual absl::StatusOr<uint64_t> Upload(const char* data, uint64_t total,
                                          const v1::Put& first,
                                          HandleMeta meta) = 0;
  // Downloads `handle`'s values into `target` (null data: fresh memory).
  virtual absl::StatusOr<HostTensor> Download(uint64_t handle,
                                              const std::string& site,
                                              DownloadTarget target) = 0;

  // Resume: what the resuming Hello asks; the resumed Welcome (on the
  // reader thread).
  virtual void FillResumeHello(v1::Hello* hello) const = 0;
  virtual void Resumed(const v1::Welcome& welcome) = 0;
  // Reader thread, holding the session's lock: request `id` was answered on
  // the stream, or (0) the stream ended. Takes no session lock.
  virtual void Answered(uint64_t id) = 0;
  virtual void Close() = 0;

  // Shared buffers: a null mapping where the daemon's memory is not
  // reachable (remote).
  virtual absl::StatusOr<SharedAllocation> AllocateShared(size_t bytes) = 0;
  virtual void FreeShared(uint64_t region) = 0;

  // What is in use (tests, tensorctl, benchmarks).
  virtual bool local() const = 0;
  virtual bool cma_active() = 0;
  virtual bool bulk_active() = 0;
  virtual uint32_t bulk_lanes() = 0;
  // Why the bulk socket's lane 0 did not connect; empty if it did or was
  // not tried (RemoteTransport only).
  virtual std::string bulk_refusal() { return ""; }
  virtual uint64_t mailbox_answers() const = 0;

 protected:
  // The stream's chunk size follows the Welcome (chunk_bytes, within
  // max_frame_bytes).
  Transport(TransportHost* host, const v1::Welcome& welcome);

  // The stream's path, which both take for what is small: Puts with the
  // bytes inline, `chunk_bytes` each; one Get answered by Data frames.
  absl::StatusOr<uint64_t> UploadInline(const char* data, uint64_t total,
                                        const v1::Put& first, HandleMeta meta);
  absl::StatusOr<HostTensor> DownloadInline(uint64_t handle,
                                            const std::string& site,
                                            DownloadTarget target);
  // One Put whose bytes `payload` names, appended (not flushed): its seq in
  // `seq`; the handle.
  absl::StatusOr<uint64_t> AppendWholePut(
      const v1::Put& first, HandleMeta meta,
      absl::FunctionRef<void(v1::Payload*)> payload, uint64_t* seq);
  // Queues and sends a Get of `handle`, `into` (when given) saying where its
  // bytes go; the request id.
  absl::StatusOr<uint64_t> SendGet(uint64_t handle, const std::string& site,
                                   DownloadTarget target,
                                   absl::FunctionRef<void(v1::Get*)> into,
                                   bool flush = true);

  TransportHost* const host_;
  const uint64_t chunk_bytes_;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_TRANSPORT_H_

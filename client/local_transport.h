// The local transport (client/transport.h): the daemon on this host, its
// shared-memory region mapped (docs/protocol.md "Shared memory";
// client/shm_mapping.h). What is below kMinBytes goes in the stream's
// messages; the rest:
//   - bytes inside a shared buffer (client/shared_buffer.h): one Put or Get
//     naming its region, the daemon's copy the only one;
//   - uploads from plain memory of kCmaMinBytes or more while the
//     daemon has caught up with the session, and downloads into plain
//     memory of that size: by cross-memory attach (docs/protocol.md
//     "Cross-memory attach"; the daemon's side is server/cma.h) by the
//     process that bound the session (at every Welcome, through
//     Welcome.cma_socket and its ticket: proto/cma_bind.h; never a forked
//     child, which the daemon would not know from its parent), once a
//     4-byte probe transfer worked;
//   - anything else through the staging buffer, a shared buffer of the
//     transport's own (AllocateShared at first need, grown to a power of
//     two up to ClientOptions::staging_bytes, bigger transfers in pieces):
//     an upload's pieces copied in and sent at once (the buffer is
//     rewritten only after the Put that read it was acknowledged, so
//     batches resent after a resume still find their bytes); a download's
//     ranged Gets, one at a time, each copied out, the first announced in
//     the region's mailbox (proto/mailbox.h: item() without the stream's
//     threads on the way back). No buffer to be had: the stream.
// In-place transfers (shared buffer, CMA) are one Put, waited for until
// acknowledged (the caller may rewrite its bytes then), or one Get.
//
// Thread safety: thread-safe. Locks, in order: cma_mu_ (the probe), mu_
// (the staging buffer; one staged transfer at a time), then the session's;
// shared_mu_
// is a leaf. The binding is an atomic, never under cma_mu_ (a resume on the
// reader thread rebinds while a probe may wait for the reader).
#ifndef TENSORD_CLIENT_LOCAL_TRANSPORT_H_
#define TENSORD_CLIENT_LOCAL_TRANSPORT_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "client/shared_ranges.h"
#include "client/shm_mapping.h"
#include "client/transport.h"
#include "runtime/core/mutex.h"

namespace tensord {
inline namespace client {
namespace internal {

class LocalTransport final : public Transport {
 public:
  // Transfers smaller than this use the stream (no gain, one more copy).
  static constexpr uint64_t kMinBytes = 256 << 10;
  // From this size an upload from, or a download into, plain memory goes by
  // cross-memory attach when it works (below it the Put's wait for its Ack
  // costs more than the copy it saves).
  static constexpr uint64_t kCmaMinBytes = 1 << 20;
  // The staging buffer: its first size (a download of unknown size asks
  // this much first), and its largest by default.
  static constexpr uint64_t kFirstStagingBytes = 1 << 20;
  static constexpr uint64_t kMaxStagingBytes = 64 << 20;

  // Maps `welcome`'s region and binds cross-memory attach (when offered and
  // ClientOptions::cma); null when the region does not map here.
  static std::unique_ptr<LocalTransport> Open(const ClientOptions& options,
                                              const v1::Welcome& welcome,
                                              TransportHost* host);

  absl::StatusOr<uint64_t> Upload(const char* data, uint64_t total,
                                  const v1::Put& first,
                                  HandleMeta meta) override;
  absl::StatusOr<HostTensor> Download(uint64_t handle, const std::string& site,
                                      DownloadTarget target) override;
  void FillResumeHello(v1::Hello* hello) const override {
    hello->set_shm_transfer(true);
  }
  // The daemon dropped the binding (the resumer might have been another
  // process): bound again, if this process had bound, before the flusher
  // resends a Put by it. A refusal turns the path off.
  void Resumed(const v1::Welcome& welcome) override;
  void Answered(uint64_t id) override;
  void Close() override {}
  absl::StatusOr<SharedAllocation> AllocateShared(size_t bytes) override;
  void FreeShared(uint64_t region) override;
  bool local() const override { return true; }
  bool cma_active() override { return CmaUsable(); }
  bool bulk_active() override { return false; }
  uint32_t bulk_lanes() override { return 0; }
  uint64_t mailbox_answers() const override { return mailbox_answers_.load(); }

 private:
  LocalTransport(const ClientOptions& options, const v1::Welcome& welcome,
                 TransportHost* host, std::unique_ptr<ShmMapping> shm);

  // Binds the session to this process when `welcome` offers it.
  void BindCma(const v1::Welcome& welcome);
  // Cross-memory attach offered (Welcome.cma), bound, in the process that
  // bound it, and the probe (a stream upload read back by a 4-byte CMA Get)
  // worked; probed once, its outcome standing for the session.
  bool CmaUsable() ABSL_LOCKS_EXCLUDED(cma_mu_);
  bool ProbeCma() ABSL_EXCLUSIVE_LOCKS_REQUIRED(cma_mu_);
  // One Put whose bytes `payload` names (a shared buffer's region, or this
  // process's memory), waited for until acknowledged.
  absl::StatusOr<uint64_t> UploadInPlace(
      const v1::Put& first, HandleMeta meta,
      absl::FunctionRef<void(v1::Payload*)> payload);
  // One Get of the `total` bytes of `handle` (of `dtype`) written in place
  // into `target`, which `into` names.
  absl::StatusOr<HostTensor> DownloadInPlace(
      uint64_t handle, const std::string& site, DType dtype, uint64_t total,
      DownloadTarget target, absl::FunctionRef<void(v1::Payload*)> into);
  // Through the staging buffer, else the stream.
  absl::StatusOr<uint64_t> UploadStaged(const char* data, uint64_t total,
                                        const v1::Put& first, HandleMeta meta)
      ABSL_LOCKS_EXCLUDED(mu_);
  // `total`: the tensor's bytes when known (else the first answer says).
  absl::StatusOr<HostTensor> DownloadStaged(uint64_t handle,
                                            const std::string& site,
                                            std::optional<uint64_t> total,
                                            DownloadTarget target)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A staging buffer of min(`bytes`, max_staging_) or more, else the one
  // there is (false: none). A grown buffer's predecessor is released after
  // the commands that named it; a refusal other than the quota's turns
  // staging off.
  bool TakeStaging(uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The staging buffer's span in a Put or Get.
  void StagingSpan(uint64_t size, v1::RegionSpan* span) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The notify Get's answer: woken through the mailbox, where the daemon
  // announces it before its frame goes out, or by Answered when the stream
  // answered first or ended.
  PendingDownload AwaitNotified(uint64_t request_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<SharedRange> FindShared(const void* p, size_t n) const;

  const std::unique_ptr<ShmMapping> shm_;
  const absl::Duration sync_spin_;

  uint64_t cma_pid_ = 0;  // the process that bound (0: never bound)
  std::atomic<bool> cma_bound_{false};
  Mutex cma_mu_;
  enum class CmaState { kUnknown, kWorks, kOff };
  CmaState cma_state_ ABSL_GUARDED_BY(cma_mu_) = CmaState::kUnknown;

  Mutex mu_ ABSL_ACQUIRED_AFTER(cma_mu_);
  uint64_t max_staging_ ABSL_GUARDED_BY(mu_);      // 0: staging off
  SharedAllocation staging_ ABSL_GUARDED_BY(mu_);  // no mapping: none yet
  uint64_t staging_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // The seq of the last Put that reads the staging buffer (0: none).
  uint64_t staging_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // The outstanding notify Get (0: none; Answered reads it on the reader
  // thread), and how many answers were taken from the mailbox (tests).
  std::atomic<uint64_t> notify_request_{0};
  std::atomic<uint64_t> mailbox_answers_{0};

  mutable Mutex shared_mu_;
  SharedRanges shared_ ABSL_GUARDED_BY(shared_mu_);  // live shared buffers
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_LOCAL_TRANSPORT_H_

#include "client/local_transport.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/cma_bind.h"
#include "proto/mailbox.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

// How long the daemon may take to answer a binding.
constexpr int kCmaBindTimeoutMs = 2000;

}  // namespace

std::unique_ptr<LocalTransport> LocalTransport::Open(
    const ClientOptions& options, const v1::Welcome& welcome,
    TransportHost* host) {
  std::unique_ptr<ShmMapping> shm = ShmMapping::Open(welcome.shm());
  if (shm == nullptr) return nullptr;
  std::unique_ptr<LocalTransport> local(
      new LocalTransport(options, welcome, host, std::move(shm)));
  if (options.cma && welcome.cma()) {
    local->cma_pid_ = static_cast<uint64_t>(getpid());
    local->BindCma(welcome);
  }
  return local;
}

LocalTransport::LocalTransport(const ClientOptions& options,
                               const v1::Welcome& welcome, TransportHost* host,
                               std::unique_ptr<ShmMapping> shm)
    : Transport(host, welcome),
      shm_(std::move(shm)),
      sync_spin_(options.sync_spin) {
  // Idle shared memory counts in a quota: at most a sixteenth of one.
  max_staging_ =
      options.staging_bytes != 0 ? options.staging_bytes : kMaxStagingBytes;
  if (welcome.quota_bytes() != 0) {
    max_staging_ = std::min<uint64_t>(
        max_staging_, std::max(kFirstStagingBytes, welcome.quota_bytes() / 16));
  }
}

absl::StatusOr<uint64_t> LocalTransport::Upload(const char* data,
                                                uint64_t total,
                                                const v1::Put& first,
                                                HandleMeta meta) {
  if (total < kMinBytes) return UploadInline(data, total, first, meta);
  if (std::optional<SharedRange> range = FindShared(data, total)) {
    const uint64_t offset = range->OffsetOf(data);
    return UploadInPlace(first, std::move(meta), [&](v1::Payload* payload) {
      v1::RegionSpan* span = payload->mutable_region();
      span->set_region(range->region);
      span->set_offset(offset);
      span->set_size(total);
    });
  }
  // By cross-memory attach the upload returns only once the daemon has read
  // the bytes, that is after everything queued before it: only when the
  // daemon has nothing of ours left to run. Behind queued work the staging
  // buffer returns at once (two copies, but off the critical path).
  if (total >= kCmaMinBytes && host_->DaemonCaughtUp() && CmaUsable()) {
    return UploadInPlace(first, std::move(meta), [&](v1::Payload* payload) {
      v1::CmaSpan* span = payload->mutable_cma();
      span->set_address(reinterpret_cast<uint64_t>(data));
      span->set_size(total);
    });
  }
  return UploadStaged(data, total, first, std::move(meta));
}

absl::StatusOr<HostTensor> LocalTransport::Download(uint64_t handle,
                                                    const std::string& site,
                                                    DownloadTarget target) {
  // In place: into a shared buffer (from kMinBytes), or into any memory by
  // cross-memory attach (from kCmaMinBytes); the daemon writes
  // `target`.
  std::optional<SharedRange> shared;
  bool cma = false;
  if (target.data != nullptr && target.capacity >= kMinBytes) {
    shared = FindShared(target.data, target.capacity);
    cma = !shared.has_value() && target.capacity >= kCmaMinBytes && CmaUsable();
  }
  if (shared.has_value() || cma) {
    // The size decides (it may wait for the Ack); poisoned, None and small
    // tensors take the other paths, which report or carry them.
    absl::StatusOr<HandleMeta> meta = host_->WaitMeta(handle);
    std::optional<uint64_t> total;
    if (meta.ok()) total = HandleTable::HealthyBytes(*meta);
    if (total.value_or(0) >= (cma ? kCmaMinBytes : kMinBytes)) {
      const uint64_t offset = shared ? shared->OffsetOf(target.data) : 0;
      return DownloadInPlace(
          handle, site, meta->dtype, *total, target, [&](v1::Payload* into) {
            if (cma) {
              into->mutable_cma()->set_address(
                  reinterpret_cast<uint64_t>(target.data));
            } else {
              into->mutable_region()->set_region(shared->region);
              into->mutable_region()->set_offset(offset);
            }
          });
    }
  }
  // A size not yet known (no Ack): the first answer tells it, at the same
  // one round trip as a stream Get. Small, poisoned or None (known as 0):
  // the stream answers.
  const std::optional<uint64_t> total = host_->KnownBytes(handle);
  if (!total.has_value() || *total >= kMinBytes) {
    return DownloadStaged(handle, site, total, target);
  }
  return DownloadInline(handle, site, target);
}

void LocalTransport::Answered(uint64_t id) {
  const uint64_t notify = notify_request_.load();
  if (notify == 0 || (id != 0 && id != notify)) return;
  std::atomic<uint32_t>* word = shm_->mailbox_word();
  // Announced (the daemon stores the word before its frame goes out): the
  // waiter reads the mailbox; the word must stay as it is for it.
  const uint32_t announced = mailbox::WordFor(notify);
  if (word->load(std::memory_order_acquire) == announced) return;
  word->store(announced | mailbox::kLocal, std::memory_order_release);
  mailbox::Wake(word);
}

// Shared buffers (docs/protocol.md "Shared buffers"): host memory the daemon
// maps too.

absl::StatusOr<SharedAllocation> LocalTransport::AllocateShared(size_t bytes) {
  absl::StatusOr<uint64_t> request_id = host_->SendRequest(
      [bytes](uint64_t id, v1::Command* command) {
        command->mutable_allocate_shared()->set_request_id(id);
        command->mutable_allocate_shared()->set_bytes(bytes);
      },
      {}, /*flush=*/true);
  if (!request_id.ok()) return request_id.status();
  PendingDownload answer = host_->AwaitAnswer(*request_id);
  if (!answer.status.ok()) return answer.status;
  if (!answer.shared) {
    return absl::InternalError(
        absl::StrCat("tensord answered AllocateShared (request ", *request_id,
                     ") with something else than a SharedBuffer"));
  }
  const v1::SharedBuffer& reply = answer.shared_reply;
  SharedAllocation out;
  out.region = reply.region();
  out.mapping = RegionMapping::Map(reply.shm(), /*populate=*/true);
  if (out.region == 0 || out.mapping == nullptr ||
      out.mapping->size() - out.mapping->data_offset() < bytes) {
    if (out.region != 0) FreeShared(out.region);
    return absl::InternalError(
        absl::StrCat("tensord made shared buffer ", out.region, " of ", bytes,
                     " bytes, but it cannot be mapped here as described (",
                     reply.shm().path(), ", ", reply.shm().size(), " bytes)"));
  }
  const uintptr_t begin = reinterpret_cast<uintptr_t>(
      out.mapping->base() + out.mapping->data_offset());
  MutexLock lock(&shared_mu_);
  shared_.Add({begin, begin + bytes, out.region, out.mapping->data_offset()});
  return out;
}

void LocalTransport::FreeShared(uint64_t region) {
  {
    MutexLock lock(&shared_mu_);
    shared_.Remove(region);
  }
  host_->ReleaseShared(region);
}

std::optional<SharedRange> LocalTransport::FindShared(const void* p,
                                                      size_t n) const {
  MutexLock lock(&shared_mu_);
  return shared_.Find(p, n);
}

// In place: a shared buffer, or this process's memory by cross-memory
// attach.

void LocalTransport::BindCma(const v1::Welcome& welcome) {
  // The daemon asks the kernel which process presented the ticket.
  cma_bound_.store(welcome.cma() &&
                   CmaBindThisProcess(welcome.cma_socket(),
                                      welcome.cma_ticket(), kCmaBindTimeoutMs));
}

void LocalTransport::Resumed(const v1::Welcome& welcome) {
  if (cma_pid_ != 0 && static_cast<uint64_t>(getpid()) == cma_pid_) {
    BindCma(welcome);
  }
}

bool LocalTransport::CmaUsable() {
  // A forked child still holds this session: the daemon would read and
  // write the parent, the process bound to it.
  if (!cma_bound_.load() || static_cast<uint64_t>(getpid()) != cma_pid_) {
    return false;
  }
  MutexLock lock(&cma_mu_);
  if (cma_state_ == CmaState::kUnknown) {
    cma_state_ = CmaState::kOff;
    if (ProbeCma()) cma_state_ = CmaState::kWorks;
  }
  return cma_state_ == CmaState::kWorks;
}

bool LocalTransport::ProbeCma() {
  // Bound is not enough: the kernel may still refuse the daemon's copies
  // (Yama's ptrace_scope, a seccomp policy without process_vm_readv): a
  // 4-byte round trip decides, so that a refusal costs a fallback here
  // instead of a failed upload later. The probe is a Get, whose failure
  // is its own answer: a refused Put would poison its handle and be the
  // next Sync's error.
  const float sent = 1.25f;
  float back = 0.0f;
  v1::Put first;
  first.set_dtype(ToWire(DType::kFloat32));
  first.add_shape(1);
  first.set_device("cpu");
  absl::StatusOr<uint64_t> handle = UploadInline(
      reinterpret_cast<const char*>(&sent), sizeof(sent), first,
      HandleMeta{DType::kFloat32, {1}, "cpu", false, absl::OkStatus()});
  if (!handle.ok()) return false;
  absl::StatusOr<HostTensor> got = DownloadInPlace(
      *handle, "", DType::kFloat32, sizeof(back),
      DownloadTarget{reinterpret_cast<char*>(&back), sizeof(back)},
      [&](v1::Payload* into) {
        into->mutable_cma()->set_address(reinterpret_cast<uint64_t>(&back));
      });
  host_->QueueRelease(*handle);
  return got.ok() && back == sent;
}

absl::StatusOr<uint64_t> LocalTransport::UploadInPlace(
    const v1::Put& first, HandleMeta meta,
    absl::FunctionRef<void(v1::Payload*)> payload) {
  uint64_t seq = 0;
  absl::StatusOr<uint64_t> handle =
      AppendWholePut(first, std::move(meta), payload, &seq);
  if (!handle.ok()) return handle.status();
  host_->Flush().IgnoreError();  // a broken stream shows below
  // The lifetime rule (client/shared_buffer.h): back to the caller, who may
  // rewrite the bytes, only once the daemon has copied them. A resume
  // resends the Put, so it waits for the Ack of the resent batch.
  absl::Status copied = host_->AwaitAck(seq);
  if (!copied.ok()) {
    host_->QueueRelease(*handle);
    return copied;
  }
  return handle;
}

absl::StatusOr<HostTensor> LocalTransport::DownloadInPlace(
    uint64_t handle, const std::string& site, DType dtype, uint64_t total,
    DownloadTarget target, absl::FunctionRef<void(v1::Payload*)> into) {
  if (total > target.capacity) {
    return DestinationTooSmall(target.capacity, total, dtype);
  }
  v1::Payload want;
  into(&want);
  if (want.has_cma()) {
    want.mutable_cma()->set_size(total);
  } else {
    want.mutable_region()->set_size(total);
  }
  absl::StatusOr<uint64_t> request_id = SendGet(
      handle, site, {}, [&](v1::Get* get) { *get->mutable_into() = want; });
  if (!request_id.ok()) return request_id.status();
  PendingDownload got = host_->AwaitAnswer(*request_id);
  if (!got.status.ok()) return got.status;
  const v1::Data& reply = got.shm_reply;
  const v1::Payload& where = reply.payload();
  const bool as_asked =
      want.has_cma() ? where.has_cma() && where.cma().size() == total
                     : where.has_region() &&
                           where.region().region() == want.region().region() &&
                           where.region().offset() == want.region().offset() &&
                           where.region().size() == total;
  if (!got.shm || !as_asked || reply.offset() != 0 || !reply.last()) {
    return absl::InternalError(
        absl::StrCat("tensord answered the in-place Get of handle ", handle,
                     " with a range it was not asked for"));
  }
  // The bytes are in place: the assembler only checks the answer.
  DataAssembler assembler;
  assembler.SetDestination(target.data, target.capacity);
  absl::Status status =
      assembler.AddBytes(reply, absl::string_view(target.data, total));
  if (!status.ok()) return status;
  return assembler.Take();
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

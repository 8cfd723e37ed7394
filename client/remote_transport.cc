#include "client/remote_transport.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "proto/bulk_socket.h"

namespace tensord {
inline namespace client {
namespace internal {

bool RemoteTransport::WantBulk(const ClientOptions& options) {
  return BulkConnection::Wanted(options);
}

RemoteTransport::RemoteTransport(const ClientOptions& options,
                                 const v1::Welcome& welcome,
                                 TransportHost* host)
    : Transport(host, welcome) {
  if (welcome.bulk_port() != 0) {
    bulk_ = std::make_unique<BulkConnection>(options, welcome.bulk_port(),
                                             welcome.bulk_token(),
                                             welcome.bulk_lanes());
  }
}

void RemoteTransport::Close() {
  if (bulk_ != nullptr) bulk_->Close();
}

bool RemoteTransport::bulk_active() {
  return bulk_ != nullptr && bulk_->Usable();
}

uint32_t RemoteTransport::bulk_lanes() {
  return bulk_ != nullptr && bulk_->Usable() ? bulk_->lanes() : 0;
}

std::string RemoteTransport::bulk_refusal() {
  return bulk_ != nullptr ? bulk_->refusal() : "";
}

absl::StatusOr<uint64_t> RemoteTransport::Upload(const char* data,
                                                 uint64_t total,
                                                 const v1::Put& first,
                                                 HandleMeta meta) {
  if (total >= BulkConnection::kMinBytes) {
    std::optional<absl::StatusOr<uint64_t>> sent =
        UploadBulk(data, total, first, meta);
    if (sent.has_value()) return *std::move(sent);
  }
  return UploadInline(data, total, first, std::move(meta));
}

absl::StatusOr<HostTensor> RemoteTransport::Download(uint64_t handle,
                                                     const std::string& site,
                                                     DownloadTarget target) {
  if (bulk_ != nullptr) {
    // Into the caller's buffer the size may wait for the Ack; into fresh
    // memory only a size already known counts (a read of a fresh scalar
    // must not wait for it).
    std::optional<uint64_t> total;
    if (target.data != nullptr &&
        target.capacity >= BulkConnection::kMinBytes) {
      absl::StatusOr<HandleMeta> meta = host_->WaitMeta(handle);
      if (meta.ok()) total = HandleTable::HealthyBytes(*meta);
    } else {
      total = host_->KnownBytes(handle);
    }
    if (total.value_or(0) >= BulkConnection::kMinBytes) {
      std::optional<absl::StatusOr<HostTensor>> got =
          DownloadBulk(handle, site, *total, target);
      if (got.has_value()) return *std::move(got);
    }
  }
  return DownloadInline(handle, site, target);
}

std::optional<absl::StatusOr<uint64_t>> RemoteTransport::UploadBulk(
    const char* data, uint64_t total, const v1::Put& first, HandleMeta meta) {
  if (bulk_ == nullptr) return std::nullopt;
  MutexLock bulk_lock(bulk_->mu());
  if (!bulk_->UsableLocked()) return std::nullopt;
  const uint32_t lanes = BulkLanesFor(total, bulk_->lanes_locked());
  uint64_t seq = 0;
  absl::StatusOr<uint64_t> appended = AppendWholePut(
      first, std::move(meta),
      [total, lanes](v1::Payload* payload) {
        v1::BulkSpan* span = payload->mutable_bulk();
        span->set_size(total);
        if (lanes > 1) span->set_lanes(lanes);
      },
      &seq);
  if (!appended.ok()) return appended.status();
  const uint64_t handle = *appended;
  // The Put goes out first (a broken stream is resumed, and the resent Put
  // finds these bytes still waiting on the socket). Once sent, the bytes
  // are the kernel's: the caller may reuse its memory.
  host_->Flush().IgnoreError();
  absl::Status sent = bulk_->SendLocked(handle, data, total, lanes);
  if (!sent.ok()) {
    // The daemon fails the Put (its handle is poisoned, and released here);
    // later transfers take the stream (the connection dropped itself).
    host_->QueueRelease(handle);
    return sent;
  }
  return handle;
}

std::optional<absl::StatusOr<HostTensor>> RemoteTransport::DownloadBulk(
    uint64_t handle, const std::string& site, uint64_t total,
    DownloadTarget target) {
  if (target.data != nullptr && total > target.capacity) return std::nullopt;
  MutexLock bulk_lock(bulk_->mu());
  if (!bulk_->UsableLocked()) return std::nullopt;
  const uint32_t connected = bulk_->lanes_locked();
  absl::StatusOr<uint64_t> request_id =
      SendGet(handle, site, target, [connected](v1::Get* get) {
        v1::BulkSpan* span = get->mutable_into()->mutable_bulk();
        if (connected > 1) span->set_lanes(connected);
      });
  if (!request_id.ok()) return request_id.status();
  PendingDownload got = host_->AwaitAnswer(*request_id);
  if (!got.status.ok()) return got.status;
  // The daemon may answer on the stream instead (a device tensor).
  if (!got.shm) return got.assembler.Take();
  const v1::Data& reply = got.shm_reply;
  const v1::BulkSpan& span = reply.payload().bulk();
  const uint64_t n = span.size();
  std::string owned;
  char* dst = target.data;
  size_t capacity = target.capacity;
  if (dst == nullptr) {
    owned.resize(n);
    dst = owned.data();
    capacity = n;
  }
  if (n == 0 || n > capacity || n != total || reply.offset() != 0 ||
      !reply.last() || !reply.payload().has_bulk() ||
      span.lanes() > connected) {
    bulk_->DropLocked();  // its bytes can no longer be matched to requests
    return absl::InternalError(absl::StrCat(
        "tensord answered the bulk Get of handle ", handle, " with ", n,
        " bytes on ", span.lanes(), " lanes for a destination of ", capacity,
        " (", connected, " lanes connected)"));
  }
  absl::Status received = bulk_->ReceiveLocked(handle, dst, n, span.lanes());
  if (!received.ok()) return received;
  // The bytes are in place: the assembler checks the answer against them.
  DataAssembler assembler;
  assembler.SetDestination(dst, capacity);
  absl::Status status = assembler.AddBytes(reply, absl::string_view(dst, n));
  if (!status.ok()) return status;
  HostTensor tensor = assembler.Take();
  if (!owned.empty()) tensor.bytes = std::move(owned);
  return tensor;
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

// Transfers on the bulk socket (docs/protocol.md "Bulk socket";
// client/bulk_connection.h owns the connection): the command goes on the
// stream and its bytes follow on the socket in command order, which holding
// bulk_->mu() across a transfer's command and bytes guarantees.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/bulk_connection.h"
#include "client/session.h"
#include "proto/bulk_socket.h"

namespace tensord {
inline namespace client {
namespace internal {

bool Session::bulk_active() { return bulk_ != nullptr && bulk_->Usable(); }

uint32_t Session::bulk_lanes() {
  return bulk_ != nullptr && bulk_->Usable() ? bulk_->lanes() : 0;
}

std::optional<absl::StatusOr<uint64_t>> Session::UploadBulk(const char* data,
                                                            uint64_t total,
                                                            v1::Put first,
                                                            HandleMeta meta) {
  if (bulk_ == nullptr) return std::nullopt;
  MutexLock bulk_lock(bulk_->mu());
  if (!bulk_->UsableLocked()) return std::nullopt;
  const uint32_t lanes = BulkLanesFor(total, bulk_->lanes_locked());
  uint64_t seq = 0;
  absl::StatusOr<uint64_t> appended = AppendWholePut(
      [total, lanes](v1::Put* put) {
        v1::BulkSpan* span = put->mutable_payload()->mutable_bulk();
        span->set_size(total);
        if (lanes > 1) span->set_lanes(lanes);
      },
      std::move(first), std::move(meta), &seq);
  if (!appended.ok()) return appended.status();
  const uint64_t handle = *appended;
  // The Put goes out first (a broken stream is resumed, and the resent Put
  // finds these bytes still waiting on the socket). Once sent, the bytes
  // are the kernel's: the caller may reuse its memory.
  Flush().IgnoreError();
  absl::Status sent = bulk_->SendLocked(handle, data, total, lanes);
  if (!sent.ok()) {
    // The daemon fails the Put (its handle is poisoned, and released here);
    // later transfers take the stream (the connection dropped itself).
    QueueRelease(handle);
    return sent;
  }
  return handle;
}

std::optional<absl::StatusOr<HostTensor>> Session::DownloadBulk(
    uint64_t handle, const std::string& site, uint64_t total,
    DownloadTarget target) {
  if (bulk_ == nullptr) return std::nullopt;
  if (target.data != nullptr && total > target.capacity) return std::nullopt;
  MutexLock bulk_lock(bulk_->mu());
  if (!bulk_->UsableLocked()) return std::nullopt;
  uint64_t request_id;
  {
    MutexLock enqueue_lock(&enqueue_mu_);
    absl::StatusOr<uint64_t> queued = EnqueueGetLocked(
        handle, site,
        [lanes = bulk_->lanes_locked()](v1::Get* get) {
          v1::BulkSpan* span = get->mutable_into()->mutable_bulk();
          if (lanes > 1) span->set_lanes(lanes);
        },
        target);
    if (!queued.ok()) return queued.status();
    request_id = *queued;
  }
  Flush().IgnoreError();
  PendingDownload got = AwaitDownload(request_id);
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
      span.lanes() > bulk_->lanes_locked()) {
    bulk_->DropLocked();  // its bytes can no longer be matched to requests
    return absl::InternalError(absl::StrCat(
        "tensord answered the bulk Get of handle ", handle, " with ", n,
        " bytes on ", span.lanes(), " lanes for a destination of ", capacity,
        " (", bulk_->lanes_locked(), " lanes connected)"));
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

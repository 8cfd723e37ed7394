// Transfers: the session's side of them. Where the bytes travel is its
// transport's (client/transport.h); here the session builds the Put's
// fields, and answers what the transport asks of it as its TransportHost.
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/session.h"

namespace tensord {
inline namespace client {
namespace internal {

absl::StatusOr<uint64_t> Session::EnqueueUpload(
    const void* data, DType dtype, const std::vector<int64_t>& shape,
    const std::string& device, bool requires_grad, const std::string& site,
    bool wrapped_number) {
  absl::StatusOr<uint64_t> total = TensorBytes(dtype, shape);
  if (!total.ok()) return total.status();
  // What the first (or only) Put carries besides the bytes.
  v1::Put first;
  first.set_dtype(ToWire(dtype));
  first.mutable_shape()->Add(shape.begin(), shape.end());
  first.set_device(device);
  first.set_requires_grad(requires_grad);
  first.set_site(site);
  first.set_wrapped_number(wrapped_number);
  return transport_->Upload(
      static_cast<const char*>(data), *total, first,
      HandleMeta{dtype, shape, device, requires_grad, absl::OkStatus()});
}

absl::StatusOr<HostTensor> Session::Download(uint64_t handle,
                                             const std::string& site,
                                             DownloadTarget target) {
  absl::StatusOr<HostTensor> got = transport_->Download(handle, site, target);
  if (!got.ok()) return got;  // the checks' reports wait for the next read
  MutexLock lock(&mu_);
  if (checks_.empty()) return got;
  absl::Status checked = TakeChecksLocked();  // Note [Deferred backward errors]
  if (!checked.ok()) return checked;
  return got;
}

absl::StatusOr<uint64_t> Session::BeginUpload(HandleMeta* meta) {
  enqueue_mu_.Lock();
  absl::StatusOr<uint64_t> handle = ReserveHandles(1, meta);
  if (!handle.ok()) {
    enqueue_mu_.Unlock();
    return handle.status();
  }
  MutexLock lock(&mu_);
  batch_.set_in_chunked_put(true);  // no Release between its Puts
  return handle;
}

absl::StatusOr<uint64_t> Session::AppendPut(
    uint64_t handle, const v1::Put& first, const HandleMeta& meta,
    uint64_t offset, bool last, size_t inline_bytes,
    absl::FunctionRef<void(v1::Payload*)> payload) {
  // All but the bytes; the first Put creates the handle.
  v1::Put header = offset == 0 ? first : v1::Put();
  header.set_handle(handle);
  header.set_offset(offset);
  header.set_last(last);
  const uint64_t creates[] = {handle};
  uint64_t seq = 0;
  // + the payload (inline bytes, or a span of a few varints), the seq field
  // and the framing.
  absl::Status status = AppendWith(
      header.ByteSizeLong() + (inline_bytes != 0 ? inline_bytes + 32 : 64),
      [&](v1::Command* slot) {
        v1::Put* put = slot->mutable_put();
        *put = header;
        payload(put->mutable_payload());
      },
      absl::MakeSpan(creates, offset == 0 ? 1 : 0),
      offset == 0 ? &meta : nullptr, &seq);
  if (!status.ok()) return status;
  return seq;
}

absl::StatusOr<uint64_t> Session::EndUpload(uint64_t handle,
                                            absl::Status status) {
  {
    MutexLock lock(&mu_);
    batch_.set_in_chunked_put(false);
    if (batch_.has_releases()) flush_cv_.Signal();  // releases held back
    if (!status.ok()) handles_.Erase(handle);
  }
  enqueue_mu_.Unlock();
  if (!status.ok()) return status;
  return handle;
}

absl::StatusOr<uint64_t> Session::SendRequest(
    absl::FunctionRef<void(uint64_t, v1::Command*)> fill, DownloadTarget target,
    bool flush) {
  absl::StatusOr<uint64_t> id;
  {
    MutexLock enqueue_lock(&enqueue_mu_);
    id = EnqueueRequest(RequestTable::Kind::kDownload, target, fill);
  }
  // A broken stream shows in the answer.
  if (id.ok() && flush) Flush().IgnoreError();
  return id;
}

PendingDownload Session::AwaitAnswer(uint64_t id) {
  MutexLock lock(&mu_);
  auto ready = [this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return requests_.DownloadDone(id) || !stream_error_.ok();
  };
  AwaitLocked(absl::Condition(&ready), /*round_trip=*/true);
  PendingDownload download = requests_.TakeDownload(id);
  if (!download.done) {
    download.done = true;
    download.status = stream_error_;
  }
  return download;
}

bool Session::AnswerPending(uint64_t id) {
  MutexLock lock(&mu_);
  return requests_.DownloadWaiting(id) && stream_error_.ok();
}

void Session::DropAnswer(uint64_t id) {
  MutexLock lock(&mu_);
  requests_.TakeDownload(id);
}

absl::Status Session::AwaitAck(uint64_t seq) {
  MutexLock lock(&mu_);
  auto acked = [this, seq]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return acked_seq_ >= seq || !stream_error_.ok() || closed_;
  };
  AwaitLocked(absl::Condition(&acked));
  if (acked_seq_ >= seq) return absl::OkStatus();
  absl::Status open = CheckOpenLocked();
  return open.ok() ? absl::UnavailableError("the tensord session ended") : open;
}

bool Session::DaemonCaughtUp() {
  MutexLock lock(&mu_);
  return std::max(acked_seq_, requests_.answered_seq()) + 1 >=
         batch_.next_seq();
}

void Session::ReleaseShared(uint64_t region) {
  {
    // A closed or broken session's buffers are freed by the daemon.
    MutexLock lock(&mu_);
    if (closed_ || !stream_error_.ok()) return;
  }
  MutexLock enqueue_lock(&enqueue_mu_);
  v1::Command command;
  command.mutable_release()->add_shared_buffers(region);
  Append(std::move(command), {}, nullptr).IgnoreError();  // sent batched
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

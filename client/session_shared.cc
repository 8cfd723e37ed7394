// Shared buffers (docs/protocol.md "Shared buffers"; client/shared_buffer.h):
// host memory the daemon maps too. A transfer whose bytes lie inside one is
// one Put or Get naming its region, and the daemon's copy between the
// buffer and tensor storage is the only one. See client/session.h for the
// locking order.
#include <cstring>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/session.h"

namespace tensord {
inline namespace client {
namespace internal {

absl::StatusOr<SharedAllocation> Session::AllocateShared(size_t bytes) {
  // Without the session's region mapped, nothing shows that the daemon's
  // memory is reachable from here: the caller uses plain memory.
  if (shm_ == nullptr) return SharedAllocation{};
  uint64_t request_id;
  {
    MutexLock enqueue_lock(&enqueue_mu_);
    absl::StatusOr<uint64_t> id =
        EnqueueRequest(RequestTable::Kind::kDownload, {},
                       [bytes](uint64_t id, v1::Command* command) {
                         command->mutable_allocate_shared()->set_request_id(id);
                         command->mutable_allocate_shared()->set_bytes(bytes);
                       });
    if (!id.ok()) return id.status();
    request_id = *id;
  }
  Flush().IgnoreError();  // a broken stream shows in the answer
  PendingDownload answer = AwaitDownload(request_id);
  if (!answer.status.ok()) return answer.status;
  if (!answer.shared) {
    return absl::InternalError(
        absl::StrCat("tensord answered AllocateShared (request ", request_id,
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
  MutexLock lock(&mu_);
  shared_.Add({begin, begin + bytes, out.region, out.mapping->data_offset()});
  return out;
}

void Session::FreeShared(uint64_t region) {
  {
    MutexLock lock(&mu_);
    shared_.Remove(region);
    // A closed or broken session's buffers are freed by the daemon.
    if (closed_ || !stream_error_.ok()) return;
  }
  MutexLock enqueue_lock(&enqueue_mu_);
  v1::Command command;
  command.mutable_release()->add_shared_buffers(region);
  Append(std::move(command), {}, nullptr).IgnoreError();  // sent batched
}

std::optional<SharedRange> Session::FindShared(const void* p, size_t n) const {
  MutexLock lock(&mu_);
  return shared_.Find(p, n);
}

absl::StatusOr<uint64_t> Session::AppendWholePut(
    const std::function<void(v1::Put*)>& set_source, v1::Put first,
    HandleMeta meta, uint64_t* seq) {
  MutexLock enqueue_lock(&enqueue_mu_);
  absl::StatusOr<uint64_t> reserved = ReserveHandles(1, &meta);
  if (!reserved.ok()) return reserved.status();
  const uint64_t handle = *reserved;
  v1::Command command;
  v1::Put* put = command.mutable_put();
  *put = std::move(first);
  put->set_handle(handle);
  put->set_last(true);
  set_source(put);
  absl::Status status = Append(std::move(command), {handle}, &meta, seq);
  if (!status.ok()) {
    MutexLock lock(&mu_);
    handles_.Erase(handle);
    return status;
  }
  return handle;
}

absl::StatusOr<uint64_t> Session::UploadInPlace(
    const std::function<void(v1::Put*)>& set_source, v1::Put first,
    HandleMeta meta) {
  uint64_t seq = 0;
  absl::StatusOr<uint64_t> appended =
      AppendWholePut(set_source, std::move(first), std::move(meta), &seq);
  if (!appended.ok()) return appended.status();
  const uint64_t handle = *appended;
  Flush().IgnoreError();  // a broken stream shows below
  // The lifetime rule (client/shared_buffer.h): back to the caller, who may
  // rewrite the bytes, only once the daemon has copied them. A resume
  // resends the Put, so it waits for the Ack of the resent batch.
  MutexLock lock(&mu_);
  auto copied = [this, seq]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return acked_seq_ >= seq || !stream_error_.ok() || closed_;
  };
  mu_.Await(absl::Condition(&copied));
  if (acked_seq_ < seq) {
    handles_.Erase(handle);
    absl::Status open = CheckOpenLocked();
    return open.ok() ? absl::UnavailableError("the tensord session ended")
                     : open;
  }
  return handle;
}

absl::StatusOr<HostTensor> Session::DownloadInPlace(
    uint64_t handle, const std::string& site, DType dtype, uint64_t total,
    DownloadTarget target,
    const std::function<void(v1::Get*)>& set_destination) {
  if (total > target.capacity) {
    return DestinationTooSmall(target.capacity, total, dtype);
  }
  v1::Get want;
  set_destination(&want);
  uint64_t request_id;
  {
    MutexLock enqueue_lock(&enqueue_mu_);
    absl::StatusOr<uint64_t> queued =
        EnqueueGetLocked(handle, site, [&](v1::Get* get) {
          set_destination(get);
          v1::Payload* into = get->mutable_into();
          if (into->has_cma()) {
            into->mutable_cma()->set_size(total);
          } else {
            into->mutable_region()->set_size(total);
          }
        });
    if (!queued.ok()) return queued.status();
    request_id = *queued;
  }
  Flush().IgnoreError();
  PendingDownload got = AwaitDownload(request_id);
  if (!got.status.ok()) return got.status;
  const v1::Payload& where = got.shm_reply.payload();
  const v1::Data& reply = got.shm_reply;
  const bool as_asked =
      want.into().has_cma()
          ? where.has_cma() && where.cma().size() == total
          : where.has_region() &&
                where.region().region() == want.into().region().region() &&
                where.region().offset() == want.into().region().offset() &&
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

// Uploads: a host buffer into a new handle, as one Put per chunk on the
// stream (the bytes copied once, into the batch), through the daemon's
// shared-memory region (session_shm.cc), from a shared buffer
// (session_shared.cc), by cross-memory attach (session_cma.cc) or on the bulk
// socket (session_bulk.cc).
#include <optional>
#include <vector>

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
  HandleMeta meta{dtype, shape, device, requires_grad, absl::OkStatus()};
  if (*total >= kShmMinBytes) {
    if (std::optional<SharedRange> range = FindShared(data, *total)) {
      const uint64_t offset = range->OffsetOf(data);
      const uint64_t region = range->region;
      const uint64_t size = *total;
      return UploadInPlace(
          [&](v1::Put* put) {
            v1::RegionSpan* span = put->mutable_payload()->mutable_region();
            span->set_region(region);
            span->set_offset(offset);
            span->set_size(size);
          },
          std::move(first), std::move(meta));
    }
  }
  // By cross-memory attach the upload returns only once the daemon has read
  // the bytes, that is after everything queued before it: only when the
  // daemon has nothing of ours left to run. Behind queued work the region's
  // slots return at once (two copies, but off the critical path).
  if (*total >= CmaProbe::kMinBytes && DaemonCaughtUp() && CmaUsable()) {
    const uint64_t address = reinterpret_cast<uint64_t>(data);
    const uint64_t size = *total;
    return UploadInPlace(
        [&](v1::Put* put) {
          v1::CmaSpan* span = put->mutable_payload()->mutable_cma();
          span->set_address(address);
          span->set_size(size);
        },
        std::move(first), std::move(meta));
  }
  if (*total >= BulkConnection::kMinBytes && bulk_ != nullptr) {
    std::optional<absl::StatusOr<uint64_t>> sent =
        UploadBulk(static_cast<const char*>(data), *total, first, meta);
    if (sent.has_value()) return *std::move(sent);
  }
  const bool use_shm = shm_ != nullptr && *total >= kShmMinBytes;
  // Only the shm path needs it; taken first (lock order).
  std::optional<MutexLock> shm_lock;
  if (use_shm) shm_lock.emplace(&shm_mu_);
  MutexLock enqueue_lock(&enqueue_mu_);
  absl::StatusOr<uint64_t> reserved = ReserveHandles(1, &meta);
  if (!reserved.ok()) return reserved.status();
  const uint64_t handle = *reserved;
  {
    MutexLock lock(&mu_);
    batch_.set_in_chunked_put(true);  // no Release between its chunks
  }
  absl::Status status;
  if (use_shm) {
    status = UploadShmChunks(static_cast<const char*>(data), *total, handle,
                             first, meta);
  }
  for (const Chunk& chunk :
       use_shm ? std::vector<Chunk>() : PlanChunks(*total, chunk_bytes_)) {
    // All but the bytes.
    v1::Put header = chunk.offset == 0 ? first : v1::Put();
    header.set_handle(handle);
    header.set_offset(chunk.offset);
    header.set_last(chunk.last);
    std::vector<uint64_t> creates;
    if (chunk.offset == 0) creates.push_back(handle);
    // The bytes are copied once, into the batch (which the stream sends
    // without another copy: Note [Aliased payloads]).
    const char* bytes = static_cast<const char*>(data) + chunk.offset;
    status = AppendWith(
        header.ByteSizeLong() + chunk.size + 32,
        [&](v1::Command* slot) {
          v1::Put* put = slot->mutable_put();
          *put = header;
          put->mutable_payload()->set_data(bytes, chunk.size);
        },
        creates, chunk.offset == 0 ? &meta : nullptr, nullptr);
    if (!status.ok()) break;
  }
  MutexLock lock(&mu_);
  batch_.set_in_chunked_put(false);
  if (batch_.has_releases()) flush_cv_.Signal();  // releases held back
  if (!status.ok()) {
    handles_.Erase(handle);
    return status;
  }
  return handle;
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

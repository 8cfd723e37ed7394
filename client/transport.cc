#include "client/transport.h"

#include <utility>

#include "client/chunking.h"
#include "client/local_transport.h"
#include "client/remote_transport.h"

namespace tensord {
inline namespace client {
namespace internal {

std::unique_ptr<Transport> Transport::Make(const ClientOptions& options,
                                           const v1::Welcome& welcome,
                                           TransportHost* host) {
  if (welcome.has_shm()) {
    std::unique_ptr<LocalTransport> local =
        LocalTransport::Open(options, welcome, host);
    if (local != nullptr) return local;
  }
  return std::make_unique<RemoteTransport>(options, welcome, host);
}

void Transport::FillHello(const ClientOptions& options, v1::Hello* hello) {
  hello->set_shm_transfer(WantShm(options));
  hello->set_bulk(RemoteTransport::WantBulk(options));
}

Transport::Transport(TransportHost* host, const v1::Welcome& welcome)
    : host_(host),
      chunk_bytes_(EffectiveChunkBytes(welcome.chunk_bytes(),
                                       welcome.max_frame_bytes())) {}

absl::StatusOr<uint64_t> Transport::UploadInline(const char* data,
                                                 uint64_t total,
                                                 const v1::Put& first,
                                                 HandleMeta meta) {
  absl::StatusOr<uint64_t> handle = host_->BeginUpload(&meta);
  if (!handle.ok()) return handle.status();
  absl::Status status;
  for (const Chunk& chunk : PlanChunks(total, chunk_bytes_)) {
    // The bytes are copied once, into the batch (which the stream sends
    // without another copy: Note [Aliased payloads]).
    const char* bytes = data + chunk.offset;
    status = host_
                 ->AppendPut(*handle, first, meta, chunk.offset, chunk.last,
                             chunk.size,
                             [&](v1::Payload* payload) {
                               payload->set_data(bytes, chunk.size);
                             })
                 .status();
    if (!status.ok()) break;
  }
  return host_->EndUpload(*handle, status);
}

absl::StatusOr<uint64_t> Transport::AppendWholePut(
    const v1::Put& first, HandleMeta meta,
    absl::FunctionRef<void(v1::Payload*)> payload, uint64_t* seq) {
  absl::StatusOr<uint64_t> handle = host_->BeginUpload(&meta);
  if (!handle.ok()) return handle.status();
  absl::StatusOr<uint64_t> put =
      host_->AppendPut(*handle, first, meta, 0, /*last=*/true, 0, payload);
  if (put.ok()) *seq = *put;
  return host_->EndUpload(*handle, put.status());
}

absl::StatusOr<uint64_t> Transport::SendGet(
    uint64_t handle, const std::string& site, DownloadTarget target,
    absl::FunctionRef<void(v1::Get*)> into, bool flush) {
  return host_->SendRequest(
      [&](uint64_t request_id, v1::Command* command) {
        v1::Get* get = command->mutable_get();
        get->set_handle(handle);
        get->set_request_id(request_id);
        get->set_site(site);
        into(get);
      },
      target, flush);
}

absl::StatusOr<HostTensor> Transport::DownloadInline(uint64_t handle,
                                                     const std::string& site,
                                                     DownloadTarget target) {
  absl::StatusOr<uint64_t> request_id =
      SendGet(handle, site, target, [](v1::Get*) {});
  if (!request_id.ok()) return request_id.status();
  PendingDownload download = host_->AwaitAnswer(*request_id);
  if (!download.status.ok()) return download.status;
  return download.assembler.Take();
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

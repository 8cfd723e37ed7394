// CommandRunner's same-host transfer paths (server/shm_transfer.h): Put
// payloads read from a region and ranged Gets written into one, the region
// being one of the session's shared buffers (server/shared_buffers.h), which
// AllocateShared makes (the session's own, id 0, holds no payload); or
// ranged Gets
// written straight into the client's memory by cross-memory attach
// (server/cma.h; its Puts: command_upload.cc).
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/host_copy.h"
#include "runtime/ops/dispatch.h"
#include "server/command_runner.h"
#include "server/proto_convert.h"

namespace tensord {

absl::StatusOr<std::shared_ptr<const ShmRegion>> CommandRunner::Region(
    uint64_t id, absl::string_view what) const {
  if (id != 0) return shared_.Find(id, what);
  return absl::InvalidArgumentError(absl::StrCat(
      what,
      ": region 0 (the session's) holds no payload; name a shared buffer "
      "(AllocateShared)"));
}

absl::StatusOr<absl::string_view> CommandRunner::PutPayload(
    const v1::Put& put) const {
  const v1::Payload& payload = put.payload();
  switch (payload.where_case()) {
    case v1::Payload::kData:
      return absl::string_view(payload.data());
    case v1::Payload::WHERE_NOT_SET:
      return absl::string_view();
    case v1::Payload::kBulk:
      if (config_.bulk == nullptr) {
        return absl::InvalidArgumentError(
            "put: payload.bulk without a bulk socket (Welcome.bulk_port was "
            "not set)");
      }
      return absl::string_view();  // ReadBulkForPut reads it
    case v1::Payload::kCma:
      if (config_.cma == nullptr) {
        return absl::InvalidArgumentError(
            "put: payload.cma without cross-memory attach (Welcome.cma was "
            "not set)");
      }
      return absl::string_view();  // ReadCmaForPut reads it
    case v1::Payload::kRegion:
      break;
  }
  const v1::RegionSpan& span = payload.region();
  auto region = Region(span.region(), "put");
  if (!region.ok()) return region.status();
  // Read before this command returns: the region may be freed after it.
  auto bytes = (*region)->Slice(
      span.offset(), span.size(),
      absl::StrCat("put (payload.region ", span.region(), ")"));
  if (!bytes.ok()) return bytes.status();
  return absl::string_view(*bytes, span.size());
}

void CommandRunner::RunAllocateShared(const v1::AllocateShared& cmd) {
  v1::ServerFrame frame;
  v1::SharedBuffer* reply = frame.mutable_shared_buffer();
  absl::Status status = shared_.Allocate(cmd.bytes(), reply);
  if (!status.ok()) {
    frame.mutable_error()->set_request_id(cmd.request_id());
    *frame.mutable_error()->mutable_status() =
        StatusToProto(status, "allocate_shared", "");
  } else {
    reply->set_request_id(cmd.request_id());
  }
  sink_->Send(std::move(frame));
}

void CommandRunner::RunShmGet(const v1::Get& get) {
  auto send_error = [&](const absl::Status& status) {
    v1::ServerFrame frame;
    frame.mutable_error()->set_request_id(get.request_id());
    *frame.mutable_error()->mutable_status() =
        StatusToProto(status, "get", get.site());
    sink_->Send(std::move(frame));
  };
  // Cross-memory attach, or a region's range.
  const v1::Payload& into = get.into();
  const bool cma = into.has_cma();
  std::shared_ptr<const ShmRegion> region;
  if (cma && config_.cma == nullptr) {
    return send_error(absl::InvalidArgumentError(
        "get: into.cma without cross-memory attach (Welcome.cma was not "
        "set)"));
  }
  if (!cma) {
    auto found = Region(into.region().region(), "get");
    if (!found.ok()) return send_error(found.status());
    region = *std::move(found);
  }
  auto entry = handles_.Find(get.handle());
  if (!entry.ok()) return send_error(entry.status());
  if ((*entry)->poisoned()) {
    v1::ServerFrame frame;
    frame.mutable_error()->set_request_id(get.request_id());
    *frame.mutable_error()->mutable_status() = *(*entry)->error;
    return sink_->Send(std::move(frame));
  }
  if ((*entry)->is_none()) {
    return send_error(absl::InvalidArgumentError(absl::StrCat(
        "handle ", get.handle(), " is None (a .grad never computed)")));
  }
  OpContext ctx;
  ctx.devices = config_.devices;
  ctx.alloc.session = config_.session;
  auto dense = Contiguous((*entry)->tensor, ctx);
  if (!dense.ok()) return send_error(dense.status());
  const Tensor& t = *dense;
  const uint64_t total = t.nbytes();
  if (get.byte_offset() > total) {
    return send_error(absl::InvalidArgumentError(
        absl::StrCat("Get.byte_offset ", get.byte_offset(), " is past the ",
                     total, " bytes of handle ", get.handle())));
  }
  const uint64_t n = std::min(cma ? into.cma().size() : into.region().size(),
                              total - get.byte_offset());
  char* dst = nullptr;
  if (!cma) {
    auto slice = region->Slice(
        into.region().offset(), n,
        absl::StrCat("get (into.region ", into.region().region(), ")"));
    if (!slice.ok()) return send_error(slice.status());
    dst = *slice;
  }
  // The buffer is written when the bytes are in host memory: at once for
  // the CPU, after the staged copy for a device (Note [Async downloads]).
  v1::ServerFrame frame;
  v1::Data* data = frame.mutable_data();
  data->set_request_id(get.request_id());
  v1::TensorMeta* meta = data->mutable_meta();
  meta->set_handle(get.handle());
  meta->set_dtype(static_cast<v1::DType>(t.dtype()));
  for (int64_t s : t.shape()) meta->add_shape(s);
  meta->set_device(t.device()->name());
  meta->set_requires_grad((*entry)->tensor.requires_grad());
  meta->set_is_leaf((*entry)->tensor.is_leaf());
  data->set_total_bytes(total);
  data->set_offset(get.byte_offset());
  if (cma) {
    v1::CmaSpan* span = data->mutable_payload()->mutable_cma();
    span->set_address(into.cma().address());
    span->set_size(n);
  } else {
    *data->mutable_payload()->mutable_region() = into.region();
    data->mutable_payload()->mutable_region()->set_size(n);
  }
  data->set_last(get.byte_offset() + n == total);
  ReadForGet(
      t, get.byte_offset(), n,
      [this, frame = std::move(frame), region = std::move(region), dst, n, cma,
       remote = into.cma().address(), notify = get.notify(),
       site = get.site()](const absl::Status& read, const char* bytes) mutable {
        absl::Status status = read;
        if (status.ok() && cma) {
          status = config_.cma->Write(
              remote, bytes, n,
              absl::StrCat("get of handle ", frame.data().meta().handle()));
        } else if (status.ok()) {
          CopyHostBytes(dst, bytes, n);  // `region` keeps `dst` mapped
        }
        if (!status.ok()) {
          v1::ServerFrame error;
          error.mutable_error()->set_request_id(frame.data().request_id());
          *error.mutable_error()->mutable_status() =
              StatusToProto(status, "get", site);
          return sink_->Send(std::move(error));
        }
        CountTransfer(cma ? TransferPath::kCma : TransferPath::kShm,
                      TransferDirection::kDownload, n);
        // The waiting client wakes on the mailbox; the stream still
        // carries the answer (Note [Resume] replays it; a client not waiting
        // any more ignores it), except to a client of the command ring,
        // which takes announced answers from the mailbox only (so they cost
        // no gRPC message: Note [Held acks]).
        if (notify && config_.shm != nullptr &&
            config_.shm->Announce(frame.data().request_id(), frame.data()) &&
            config_.shm->ring_bytes() != 0) {
          return;
        }
        sink_->Send(std::move(frame));
      });
}

}  // namespace tensord

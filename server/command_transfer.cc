// CommandRunner's data movement: chunked uploads (Put) and downloads (Get).
#include <cstring>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "server/command_runner.h"
#include "server/proto_convert.h"
#include "spdlog/spdlog.h"

namespace tensord {

void CommandRunner::AbortPendingPut(v1::Ack* ack) {
  std::unique_ptr<PendingPut> put = std::move(pending_put_);
  if (!put->tensor.defined()) return;  // already failed and reported
  HandleEntry entry;
  entry.error = errors_.Keep(
      absl::InvalidArgumentError(absl::StrCat(
          "upload of handle ", put->handle, " was interrupted after ",
          put->received, " of ", put->tensor.nbytes(),
          " bytes (its chunks must be consecutive commands ending with last)")),
      "put", put->site);
  NoteError(*entry.error);
  Create(put->handle, std::move(entry), ack);
}

void CommandRunner::RunPut(const v1::Put& put, v1::Ack* ack) {
  // A bulk Put's bytes are on the socket whatever becomes of the Put: read
  // into the tensor below, or dropped on the way out so that the next bulk
  // command finds its own bytes next.
  const v1::Payload& where = put.payload();
  const bool bulk = where.has_bulk();
  bool bulk_taken = !bulk || config_.bulk == nullptr;
  auto drop_bulk = absl::MakeCleanup([&] {
    if (bulk_taken) return;
    config_.bulk
        ->Discard(where.bulk().size(),
                  absl::StrCat("put of handle ", put.handle()),
                  where.bulk().lanes())
        .IgnoreError();  // the channel is broken then; later ones say so
  });
  const bool continuation = pending_put_ != nullptr;
  auto fail = [&](const absl::Status& status) {
    HandleEntry entry;
    entry.error = errors_.Keep(status, "put", put.site());
    NoteError(*entry.error);
    Create(put.handle(), std::move(entry), ack);
    if (!put.last()) {  // swallow the rest of this upload's chunks
      pending_put_ = std::make_unique<PendingPut>();
      pending_put_->handle = put.handle();
    } else {
      pending_put_.reset();
    }
  };
  // `payload.data`, a range of a region, or nothing (cross-memory attach and
  // the bulk socket: read in place below, once the checks passed).
  auto payload = PutPayload(put);
  if (!payload.ok()) {
    if (continuation && !pending_put_->tensor.defined()) {  // being swallowed
      if (put.last()) pending_put_.reset();
      return;
    }
    return fail(payload.status());
  }
  const absl::string_view data = *payload;
  const bool cma = where.has_cma();
  const uint64_t chunk = bulk  ? where.bulk().size()
                         : cma ? where.cma().size()
                               : data.size();
  if (continuation) {
    PendingPut& p = *pending_put_;
    if (!p.tensor.defined()) {  // a failed upload: drop chunks until the last
      if (put.last()) pending_put_.reset();
      return;
    }
    if (put.offset() != p.received || chunk > p.tensor.nbytes() - p.received) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "upload chunk of handle ", put.handle(), " at offset ", put.offset(),
          " with ", chunk, " bytes does not continue the ", p.received, " of ",
          p.tensor.nbytes(), " bytes received")));
    }
  } else {
    absl::Status id_ok = handles_.CheckNew(put.handle());
    if (!id_ok.ok()) return ReportFrameError(id_ok, "put", put.site());
    auto dtype = DTypeFromWire(put.dtype());
    if (!dtype.ok()) return fail(dtype.status());
    Shape shape(put.shape().begin(), put.shape().end());
    absl::Status shape_ok = CheckShape(shape, ItemSize(*dtype));
    if (!shape_ok.ok()) return fail(shape_ok);
    Device* device = put.device().empty() ? default_device_
                                          : config_.devices->Find(put.device());
    if (device == nullptr) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "unknown device '", put.device(),
          "' (this daemon serves: ", config_.devices->Names(), ")")));
    }
    if (put.wrapped_number() && !shape.empty()) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat("upload of handle ", put.handle(),
                       ": a wrapped number is 0-dim, got ", "shape ",
                       ShapeToString(shape))));
    }
    if (put.offset() != 0) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat("the first upload chunk of handle ", put.handle(),
                       " must have offset 0, got ", put.offset())));
    }
    const size_t total = NumElements(shape) * ItemSize(*dtype);
    if (chunk > total) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "upload of handle ", put.handle(), " carries ", chunk, " bytes but ",
          DTypeName(*dtype), ShapeToString(shape), " holds ", total)));
    }
    auto alloc = UploadContext(device);
    if (!alloc.ok()) return fail(alloc.status());
    const SiteText site = InlineSite(put.site());
    alloc->site = &site;  // Note [Memory history]
    auto tensor = Tensor::Empty(device, *dtype, shape, *alloc);
    if (!tensor.ok()) return fail(tensor.status());
    pending_put_ = std::make_unique<PendingPut>();
    pending_put_->handle = put.handle();
    pending_put_->tensor = *std::move(tensor);
    pending_put_->requires_grad = put.requires_grad();
    pending_put_->wrapped_number = put.wrapped_number();
    pending_put_->site = put.site();
  }
  PendingPut& p = *pending_put_;
  bulk_taken = true;
  absl::Status copied = bulk  ? ReadBulkForPut(put, p.tensor, p.received)
                        : cma ? ReadCmaForPut(put, p.tensor, p.received)
                              : WriteForPut(p.tensor, p.received, data);
  if (!copied.ok()) return fail(copied);
  CountTransfer(bulk                 ? TransferPath::kBulk
                : cma                ? TransferPath::kCma
                : where.has_region() ? TransferPath::kShm
                                     : TransferPath::kStream,
                TransferDirection::kUpload, chunk);
  p.received += chunk;
  if (!put.last()) return;
  if (p.received != p.tensor.nbytes()) {
    return fail(absl::InvalidArgumentError(absl::StrCat(
        "upload of handle ", put.handle(), " ended after ", p.received,
        " bytes, but the tensor holds ", p.tensor.nbytes())));
  }
  HandleEntry entry;
  entry.tensor = std::move(p.tensor);
  entry.tensor.set_wrapped_number(p.wrapped_number);
  if (p.requires_grad) {
    if (!IsFloating(entry.tensor.dtype())) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "only tensors of floating point dtype can require gradients, got ",
          DTypeName(entry.tensor.dtype()))));
    }
    entry.tensor.EnsureAutograd().requires_grad = true;
  }
  pending_put_.reset();
  Create(put.handle(), std::move(entry), ack);
}

void CommandRunner::RunGet(const v1::Get& get) {
  if (get.into().has_region() || get.into().has_cma()) return RunShmGet(get);
  auto send_error = [&](const v1::Status& status) {
    v1::ServerFrame frame;
    frame.mutable_error()->set_request_id(get.request_id());
    *frame.mutable_error()->mutable_status() = status;
    sink_->Send(std::move(frame));
  };
  auto entry = handles_.Find(get.handle());
  if (!entry.ok())
    return send_error(StatusToProto(entry.status(), "get", get.site()));
  if ((*entry)->poisoned()) return send_error(*(*entry)->error);
  if ((*entry)->is_none()) {
    return send_error(StatusToProto(
        absl::InvalidArgumentError(absl::StrCat(
            "handle ", get.handle(), " is None (a .grad never computed)")),
        "get", get.site()));
  }
  OpContext ctx;
  ctx.devices = config_.devices;
  ctx.alloc.session = config_.session;
  auto dense = Contiguous((*entry)->tensor, ctx);
  if (!dense.ok())
    return send_error(StatusToProto(dense.status(), "get", get.site()));
  const Tensor& t = *dense;
  // What the frames need, taken now: `get` lives on the batch's arena and
  // the handle's tensor may change before a device copy finishes.
  v1::TensorMeta meta;
  meta.set_handle(get.handle());
  meta.set_dtype(static_cast<v1::DType>(t.dtype()));
  for (int64_t s : t.shape()) meta.add_shape(s);
  meta.set_device(t.device()->name());
  meta.set_requires_grad((*entry)->tensor.requires_grad());
  meta.set_is_leaf((*entry)->tensor.is_leaf());
  const size_t total = t.nbytes();
  if (get.into().has_bulk() && total >= kBulkMinGetBytes &&
      t.device()->kind() == DeviceKind::kCpu && config_.bulk != nullptr &&
      config_.bulk->attached()) {
    return SendBulkData(
        get.request_id(), meta, t, get.site(),
        BulkLanesFor(total, std::min(get.into().bulk().lanes(),
                                     config_.bulk->lanes_attached())));
  }
  ReadForGet(
      t, 0, total,
      [this, meta = std::move(meta), request_id = get.request_id(),
       site = get.site(), total](const absl::Status& read, const char* bytes) {
        if (!read.ok()) {
          v1::ServerFrame frame;
          frame.mutable_error()->set_request_id(request_id);
          *frame.mutable_error()->mutable_status() =
              StatusToProto(read, "get", site);
          return sink_->Send(std::move(frame));
        }
        SendData(request_id, meta, bytes, total);
      });
}

void CommandRunner::SendBulkData(uint64_t request_id,
                                 const v1::TensorMeta& meta, const Tensor& t,
                                 const std::string& site, uint32_t lanes) {
  const size_t total = t.nbytes();
  v1::ServerFrame frame;
  v1::Data* data = frame.mutable_data();
  data->set_request_id(request_id);
  *data->mutable_meta() = meta;
  data->set_total_bytes(total);
  v1::BulkSpan* span = data->mutable_payload()->mutable_bulk();
  span->set_size(total);
  if (lanes > 1) span->set_lanes(lanes);
  data->set_last(true);
  sink_->Send(std::move(frame));
  // The client reads the bytes once the frame has told it their size; a
  // failure here leaves it a short read, which it reports, and breaks the
  // channel for later transfers (they take the stream).
  absl::Status sent =
      config_.bulk->Write(static_cast<const char*>(t.data()), total,
                          absl::StrCat("get of handle ", meta.handle()), lanes);
  if (!sent.ok()) {
    spdlog::warn("{} ({})", sent.ToString(), site);
    return;
  }
  CountTransfer(TransferPath::kBulk, TransferDirection::kDownload, total);
}

void CommandRunner::SendData(uint64_t request_id, const v1::TensorMeta& meta,
                             const char* bytes, size_t total) {
  size_t offset = 0;
  do {
    const size_t n = std::min(config_.chunk_bytes, total - offset);
    v1::ServerFrame frame;
    v1::Data* data = frame.mutable_data();
    data->set_request_id(request_id);
    if (offset == 0) {
      *data->mutable_meta() = meta;
      data->set_total_bytes(total);
    }
    data->set_offset(offset);
    data->mutable_payload()->set_data(bytes + offset, n);
    offset += n;
    data->set_last(offset == total);
    sink_->Send(std::move(frame));
  } while (offset < total);
  CountTransfer(TransferPath::kStream, TransferDirection::kDownload, total);
}

}  // namespace tensord

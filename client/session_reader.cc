// The reader thread and the sync points that wait on what it receives.
// See client/session.h for the locking order.
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/data_frame.h"
#include "client/session.h"
#include "client/status.h"
#include "proto/frame_buffer.h"
#include "proto/packed_commands.h"
#include "runtime/core/block_cache.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

// A break the daemon did not choose: the session is still there to resume.
// (The daemon ends sessions with OK, ABORTED for a kill, UNAVAILABLE only
// when shutting down, or an auth or protocol status.)
bool TransportBroke(const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::CANCELLED) return true;
  return status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         status.error_message().find("shutting down") == std::string::npos;
}

}  // namespace

void Session::ReadLoop() {
  grpc::ByteBuffer buffer;
  DataFrame data;  // reused: its vectors keep their capacity
  // Other frames are parsed on one arena, reset per frame: an Ack's
  // TensorMetas and their strings cost no allocation each (Note [Frame
  // block cache]).
  google::protobuf::Arena arena(FrameArenaOptions());
  while (true) {
    absl::Status bad_frame;
    while (stream_->Read(&buffer)) {
      if (DecodeDataFrame(&buffer, &data)) {  // Note [Data frames in place]
        buffer.Clear();
        HandleFrame(data.header, data.payload);
        data.slices.clear();  // gRPC's memory back before the next read
        continue;
      }
      arena.Reset();
      v1::ServerFrame& frame =
          *google::protobuf::Arena::CreateMessage<v1::ServerFrame>(&arena);
      if (!ParseFromByteBuffer(&buffer, &frame)) {
        bad_frame = absl::InternalError(absl::StrCat(
            "tensord at ", address_,
            " sent a frame that does not parse as a tensord.v1.ServerFrame"));
        context_->TryCancel();
        break;
      }
      HandleFrame(frame);
    }
    grpc::Status grpc_status;
    {
      // Finish must not race a Write; stream_live_ stops later ones.
      MutexLock write_lock(&write_mu_);
      stream_live_ = false;
      grpc_status = stream_->Finish();
    }
    absl::Status status =
        bad_frame.ok() ? StatusFromGrpc(grpc_status) : bad_frame;
    bool resume;
    {
      MutexLock lock(&mu_);
      resume = options_.resume && !closing_ && !closed_ && bad_frame.ok() &&
               TransportBroke(grpc_status);
      resuming_ = resume;
    }
    if (resume) {
      absl::Status resumed = Resume(status);
      if (resumed.ok()) continue;
      MutexLock lock(&mu_);
      resuming_ = false;
      stream_error_ = resumed;
      reader_done_ = true;
      WakeMailboxLocked();
      return;
    }
    MutexLock lock(&mu_);
    if (!status.ok()) {
      status = absl::Status(status.code(),
                            absl::StrCat("session with tensord at ", address_,
                                         " ended: ", status.message()));
    } else if (closing_ || closed_) {
      status = absl::FailedPreconditionError("the tensord session is closed");
    } else {
      status = absl::UnavailableError(
          absl::StrCat("tensord at ", address_, " ended the session"));
    }
    stream_error_ = status;
    reader_done_ = true;
    WakeMailboxLocked();
    return;
  }
}

void Session::HandleFrame(const v1::ServerFrame& frame,
                          absl::Span<const absl::string_view> payload) {
  MutexLock lock(&mu_);
  if (options_.resume && replay_.SkipReplayed(frame, acked_seq_)) return;
  if (frame.has_ack()) {
    for (const v1::TensorMeta& meta : frame.ack().created()) {
      handles_.SetMeta(meta.handle(), meta.dtype(), meta.shape(), meta.device(),
                       meta.requires_grad(), meta.is_leaf(), &meta);
    }
    // Note [Packed metas]: a bad entry leaves the handles from it on
    // unknown, which MetaOf reports as acknowledged without metadata.
    packed::Reader metas(frame.ack().packed_created());
    packed::Meta m;
    while (!metas.done() && metas.NextMeta(&m).ok()) {
      static const std::string* const kNoDevice = new std::string();
      const std::string& device = m.device < welcome_.devices_size()
                                      ? welcome_.devices(m.device).name()
                                      : *kNoDevice;
      handles_.SetMeta(m.handle, static_cast<int>(m.dtype), m.shape, device,
                       (m.flags & packed::kRequiresGrad) != 0,
                       (m.flags & packed::kIsLeaf) != 0, nullptr);
    }
    acked_seq_ = std::max(acked_seq_, frame.ack().last_seq());
    replay_.Acked(acked_seq_);
  } else {
    // Answers to requests (anything else, a second Welcome or an unknown
    // kind, is ignored); an Error answering none is reported by the next
    // Sync.
    absl::Status unanswered = requests_.Apply(frame, payload);
    if (!unanswered.ok() && frame_error_.ok()) frame_error_ = unanswered;
  }
  const uint64_t answered = frame.has_data()    ? frame.data().request_id()
                            : frame.has_error() ? frame.error().request_id()
                                                : 0;
  if (answered != 0 && answered == notify_request_) WakeMailboxLocked();
}

void Session::WakeMailboxLocked() {
  if (notify_request_ == 0) return;
  std::atomic<uint32_t>* word = shm_->mailbox_word();
  // Announced (the daemon stores the word before its frame goes out): the
  // waiter reads the mailbox; the word must stay as it is for it.
  const uint32_t announced = mailbox::WordFor(notify_request_);
  if (word->load(std::memory_order_acquire) == announced) return;
  word->store(announced | mailbox::kLocal, std::memory_order_release);
  mailbox::Wake(word);
}

absl::Status Session::Sync() {
  uint64_t request_id;
  {
    MutexLock enqueue_lock(&enqueue_mu_);
    absl::StatusOr<uint64_t> id = EnqueueRequest(
        RequestTable::Kind::kSync, {}, [](uint64_t id, v1::Command* command) {
          command->mutable_sync()->set_request_id(id);
        });
    if (!id.ok()) return id.status();
    request_id = *id;
  }
  Flush().IgnoreError();  // a broken stream shows in stream_error_ below
  MutexLock lock(&mu_);
  auto ready = [this, request_id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return requests_.SyncDone(request_id) || !stream_error_.ok();
  };
  mu_.Await(absl::Condition(&ready));
  std::optional<absl::Status> result = requests_.TakeSync(request_id);
  if (!result.has_value()) return stream_error_;
  absl::Status frame_error = std::exchange(frame_error_, absl::OkStatus());
  return result->ok() ? frame_error : *result;
}

absl::StatusOr<HostTensor> Session::Download(uint64_t handle,
                                             const std::string& site,
                                             DownloadTarget target) {
  // In place: into a shared buffer (from kShmMinBytes), or into any memory
  // by cross-memory attach (from CmaProbe::kMinBytes); the daemon writes
  // `target`.
  std::function<void(v1::Get*)> in_place;
  uint64_t min_bytes = 0;
  if (target.data != nullptr && target.capacity >= kShmMinBytes) {
    if (std::optional<SharedRange> shared =
            FindShared(target.data, target.capacity)) {
      const uint64_t region = shared->region;
      const uint64_t offset = shared->OffsetOf(target.data);
      in_place = [region, offset](v1::Get* get) {
        v1::RegionSpan* span = get->mutable_into()->mutable_region();
        span->set_region(region);
        span->set_offset(offset);
      };
      min_bytes = kShmMinBytes;
    } else if (target.capacity >= CmaProbe::kMinBytes && CmaUsable()) {
      const uint64_t address = reinterpret_cast<uint64_t>(target.data);
      in_place = [address](v1::Get* get) {
        get->mutable_into()->mutable_cma()->set_address(address);
      };
      min_bytes = CmaProbe::kMinBytes;
    }
  }
  if (in_place) {
    // The size decides (it may wait for the Ack); poisoned, None and small
    // tensors take the ordinary path, which reports or carries them.
    absl::StatusOr<HandleMeta> meta = WaitMeta(handle);
    if (meta.ok() && meta->error.ok() && !meta->is_none) {
      absl::StatusOr<uint64_t> total = TensorBytes(meta->dtype, meta->shape);
      if (total.ok() && *total >= min_bytes) {
        return DownloadInPlace(handle, site, meta->dtype, *total, target,
                               in_place);
      }
    }
  }
  if (bulk_ != nullptr) {
    // The bulk socket, for what is large. Into the caller's buffer the size
    // may wait for the Ack (as above); into fresh memory only a size already
    // known counts (a read of a fresh scalar must not wait for it).
    std::optional<uint64_t> total;
    if (target.data != nullptr &&
        target.capacity >= BulkConnection::kMinBytes) {
      absl::StatusOr<HandleMeta> meta = WaitMeta(handle);
      if (meta.ok()) total = HandleTable::HealthyBytes(*meta);
    } else {
      total = KnownBytes(handle);
    }
    if (total.value_or(0) >= BulkConnection::kMinBytes) {
      std::optional<absl::StatusOr<HostTensor>> got =
          DownloadBulk(handle, site, *total, target);
      if (got.has_value()) return *std::move(got);
    }
  }
  if (shm_ != nullptr) {
    // A size not yet known (no Ack): the first shm answer tells it, at the
    // same one round trip as a stream Get. Small, poisoned or None (known
    // as 0): the stream answers.
    const std::optional<uint64_t> total = KnownBytes(handle);
    if (!total.has_value() || *total >= kShmMinBytes) {
      return DownloadShm(handle, site, total, target);
    }
  }
  uint64_t request_id;
  {
    MutexLock enqueue_lock(&enqueue_mu_);
    absl::StatusOr<uint64_t> queued = EnqueueGetLocked(
        handle, site, [](v1::Get*) {}, target);
    if (!queued.ok()) return queued.status();
    request_id = *queued;
  }
  Flush().IgnoreError();
  PendingDownload download = AwaitDownload(request_id);
  if (!download.status.ok()) return download.status;
  return download.assembler.Take();
}

std::optional<uint64_t> Session::KnownBytes(uint64_t handle) {
  MutexLock lock(&mu_);
  return handles_.KnownBytes(handle);
}

std::optional<HandleMeta> Session::KnownMeta(uint64_t handle) {
  MutexLock lock(&mu_);
  const HandleTable::Entry* entry = handles_.Find(handle);
  if (entry == nullptr || !entry->known) return std::nullopt;
  return entry->meta;
}

absl::StatusOr<HandleMeta> Session::WaitMeta(uint64_t handle) {
  uint64_t seq;
  bool need_flush;
  {
    MutexLock lock(&mu_);
    const HandleTable::Entry* entry = handles_.Find(handle);
    if (entry == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("handle ", handle, " is not live in this session"));
    }
    if (entry->known) return entry->meta;
    seq = entry->seq;
    need_flush = seq > sent_seq_;
  }
  if (need_flush) Flush().IgnoreError();
  MutexLock lock(&mu_);
  auto ready = [this, handle, seq]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const HandleTable::Entry* entry = handles_.Find(handle);
    return entry == nullptr || entry->known || acked_seq_ >= seq ||
           !stream_error_.ok();
  };
  mu_.Await(absl::Condition(&ready));
  const HandleTable::Entry* entry = handles_.Find(handle);
  if (entry == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("handle ", handle, " is not live in this session"));
  }
  if (entry->known) return entry->meta;
  if (!stream_error_.ok()) return stream_error_;
  return absl::InternalError(absl::StrCat("tensord acknowledged command ", seq,
                                          " without the metadata of handle ",
                                          handle, " it created"));
}

absl::StatusOr<uint64_t> Session::EnqueueGetLocked(
    uint64_t handle, const std::string& site,
    absl::FunctionRef<void(v1::Get*)> fill, DownloadTarget target) {
  return EnqueueRequest(RequestTable::Kind::kDownload, target,
                        [&](uint64_t request_id, v1::Command* command) {
                          v1::Get* get = command->mutable_get();
                          get->set_handle(handle);
                          get->set_request_id(request_id);
                          get->set_site(site);
                          fill(get);
                        });
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

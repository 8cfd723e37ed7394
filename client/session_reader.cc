// The reader thread and the sync points that wait on what it receives.
// See client/session.h for the locking order.
#include <optional>
#include <utility>

#include "absl/algorithm/container.h"
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
      transport_->Answered(0);
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
    transport_->Answered(0);
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
    // Note [Deferred backward errors]: a check that reports an error stands
    // for the frame errors before it (the daemon counts them in its report,
    // and a failed Backward sends one), as a Sync's answer does.
    if (frame.has_sync_done() && frame.sync_done().error().code() != 0 &&
        absl::c_linear_search(checks_, frame.sync_done().request_id())) {
      frame_error_ = absl::OkStatus();
    }
  }
  const uint64_t answered = frame.has_data()    ? frame.data().request_id()
                            : frame.has_error() ? frame.error().request_id()
                                                : 0;
  if (answered != 0) transport_->Answered(answered);
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
  AwaitLocked(absl::Condition(&ready), /*round_trip=*/true);
  std::optional<absl::Status> result = requests_.TakeSync(request_id);
  if (!result.has_value()) return stream_error_;
  // The checks before this Sync were answered before it: their reports
  // come first, as the daemon raised them first.
  absl::Status checked = TakeChecksLocked();
  absl::Status frame_error = std::exchange(frame_error_, absl::OkStatus());
  if (!checked.ok()) return checked;
  return result->ok() ? frame_error : *result;
}

void Session::AwaitLocked(const absl::Condition& ready, bool round_trip) {
  if (round_trip) ++waits_;
  if (ready.Eval()) return;
  if (!round_trip) ++waits_;
  mu_.Await(ready);
}

int64_t Session::waits() const {
  MutexLock lock(&mu_);
  return waits_;
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
  AwaitLocked(absl::Condition(&ready));
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

}  // namespace internal
}  // namespace client
}  // namespace tensord

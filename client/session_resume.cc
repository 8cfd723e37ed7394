// Opening a session stream (Hello/Welcome) and resuming a session whose
// stream broke (docs/protocol.md "Resume"). See client/session.h.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/session.h"
#include "client/status.h"
#include "proto/frame_buffer.h"
#include "proto/packed_commands.h"
#include "runtime/core/mutex.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

absl::Status ClosedError() {
  return absl::FailedPreconditionError("the tensord session is closed");
}

// Worth another attempt: the daemon (or the path to it) is not there yet.
bool Retryable(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsCancelled(status);
}

}  // namespace

absl::StatusOr<Session::OpenedStream> Session::OpenStream(
    const v1::Hello& hello, absl::Duration timeout) {
  const bool resuming = !hello.resume_session_id().empty();
  OpenedStream opened;
  opened.context = std::make_unique<grpc::ClientContext>();
  if (!options_.token.empty()) {
    opened.context->AddMetadata("authorization", "Bearer " + options_.token);
  }
  // A resume waits for the channel to reconnect (bounded by the watchdog).
  if (resuming) opened.context->set_wait_for_ready(true);
  {
    MutexLock lock(&mu_);
    if (closing_) return ClosedError();
    attempt_context_ = opened.context.get();  // Close() cancels it
  }
  // What the generated stub does for a typed stream, with byte buffers.
  opened.stream.reset(
      grpc::internal::ClientReaderWriterFactory<
          grpc::ByteBuffer, grpc::ByteBuffer>::Create(channel_.get(),
                                                      session_method_,
                                                      opened.context.get()));
  auto hello_frame = std::make_shared<v1::ClientFrame>();
  *hello_frame->mutable_hello() = hello;
  grpc::ByteBuffer reply_bytes;
  // A daemon that accepts the stream but never answers must not hang us: a
  // watchdog cancels the call after `timeout`.
  Notification answered;
  bool timed_out = false;  // written by the watchdog, read after join()
  grpc::ClientContext* context = opened.context.get();
  std::thread watchdog([&answered, &timed_out, timeout, context] {
    if (!answered.WaitForNotificationWithTimeout(timeout)) {
      timed_out = true;
      context->TryCancel();
    }
  });
  const bool ok = opened.stream->Write(SerializeAliased(hello_frame)) &&
                  opened.stream->Read(&reply_bytes);
  answered.Notify();
  watchdog.join();
  {
    MutexLock lock(&mu_);
    attempt_context_ = nullptr;
  }
  const std::string refused = absl::StrCat(
      "tensord at ", address_,
      resuming ? " refused to resume it: " : " refused the session: ");
  if (!ok) {
    absl::Status status = StatusFromGrpc(opened.stream->Finish());
    if (timed_out) {
      return absl::DeadlineExceededError(
          absl::StrCat("tensord at ", address_, " did not answer Hello within ",
                       absl::FormatDuration(timeout)));
    }
    if (status.ok()) {
      status = absl::UnavailableError("the stream closed before Welcome");
    }
    return absl::Status(status.code(), absl::StrCat(refused, status.message()));
  }
  absl::Status bad;
  v1::ServerFrame reply;
  if (!ParseFromByteBuffer(&reply_bytes, &reply)) {
    bad = absl::InternalError(
        absl::StrCat("tensord at ", address_,
                     " answered Hello with a frame that does "
                     "not parse as a tensord.v1.ServerFrame"));
  } else if (!reply.has_welcome()) {
    bad = absl::InternalError(absl::StrCat(
        "tensord at ", address_, " answered Hello without a Welcome"));
  } else if (reply.welcome().protocol_version() != 0 &&
             reply.welcome().protocol_version() !=
                 v1::PROTOCOL_VERSION_CURRENT) {
    bad = absl::FailedPreconditionError(absl::StrCat(
        "tensord at ", address_, " speaks protocol version ",
        reply.welcome().protocol_version(), "; this client speaks ",
        static_cast<int>(v1::PROTOCOL_VERSION_CURRENT)));
  } else if (resuming &&
             (!reply.welcome().resumed() ||
              reply.welcome().session_id() != hello.resume_session_id())) {
    bad = absl::FailedPreconditionError(absl::StrCat(
        refused, "it answered with a new session (does it support resume?)"));
  }
  if (!bad.ok()) {
    opened.context->TryCancel();
    opened.stream->Finish().ok();  // the status is ours (CANCELLED)
    return bad;
  }
  opened.welcome = std::move(*reply.mutable_welcome());
  return opened;
}

absl::Status Session::Resume(const absl::Status& cause) {
  const absl::Time deadline = absl::Now() + options_.resume_timeout;
  absl::Duration backoff = absl::Milliseconds(10);
  absl::Status last;
  int attempts = 0;
  bool out_of_time = false;
  while (true) {
    v1::Hello hello;
    {
      MutexLock lock(&mu_);
      if (closing_) return ClosedError();
      hello.set_resume_received_seq(acked_seq_);
    }
    hello.set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
    hello.set_token(options_.token);
    hello.set_client_name(options_.client_name);
    hello.set_resume_session_id(welcome_.session_id());
    hello.set_resume_secret(welcome_.resume_secret());
    hello.set_shm_transfer(shm_ != nullptr);
    const absl::Duration left =
        std::max(deadline - absl::Now(), absl::Milliseconds(1));
    ++attempts;
    absl::StatusOr<OpenedStream> opened =
        OpenStream(hello, std::min(options_.connect_timeout, left));
    if (opened.ok()) return Adopt(std::move(*opened));
    last = opened.status();
    {
      MutexLock lock(&mu_);
      if (closing_) return ClosedError();
    }
    if (!Retryable(last)) break;
    if (absl::Now() + backoff >= deadline) {
      out_of_time = true;
      break;
    }
    {
      // A timed condition wait, not a sleep: Close() ends it at once.
      MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&closing_), backoff)) {
        return ClosedError();
      }
    }
    backoff = std::min(backoff * 2, absl::Seconds(1));
  }
  const std::string within =
      out_of_time ? absl::StrCat(" within ",
                                 absl::FormatDuration(options_.resume_timeout),
                                 " (", attempts, " attempts)")
                  : "";
  return absl::Status(
      Retryable(last) ? absl::StatusCode::kUnavailable : last.code(),
      absl::StrCat("the tensord session could not be resumed", within, ": ",
                   last.message(), "; its stream to ", address_,
                   " had broken: ", cause.message()));
}

absl::Status Session::Adopt(OpenedStream opened) {
  MutexLock write_lock(&write_mu_);
  bool give_up;
  {
    MutexLock lock(&mu_);
    give_up = closing_ || writes_done_;
    if (!give_up) {
      // The replay starts with the frames received since the last Ack.
      replay_skip_.assign(received_since_ack_.begin(),
                          received_since_ack_.end());
      stream_.reset();  // before its context
      context_ = std::move(opened.context);
      stream_ = std::move(opened.stream);
      ++resumes_;
      // The flusher resends (not this thread: the reader must keep reading
      // the replay, or a daemon blocked on sending it stops reading too);
      // Flush only queues until it is done (resuming_ stays set).
      resend_after_ = opened.welcome.resumed_applied_seq();
      resend_pending_ = true;
      flush_cv_.Signal();
    }
  }
  if (give_up) {
    opened.context->TryCancel();
    opened.stream->Finish().ok();  // ours (CANCELLED)
    return ClosedError();
  }
  stream_live_ = true;
  return absl::OkStatus();
}

void Session::ResendUnacked() {
  MutexLock write_lock(&write_mu_);
  std::vector<std::shared_ptr<const v1::ClientFrame>> resend;
  {
    MutexLock lock(&mu_);
    if (!resend_pending_) return;
    resend_pending_ = false;
    // Commands at or below resumed_applied_seq ran: their replies are in
    // the replay, they must not be sent again.
    const uint64_t applied = resend_after_;
    for (const UnackedBatch& batch : unacked_) {
      if (batch.last_seq <= applied) continue;
      if (batch.frame->batch().commands(0).seq() > applied) {
        resend.push_back(batch.frame);
        continue;
      }
      // A packed run that straddles `applied` goes whole: the daemon skips
      // its applied entries (Note [Packed commands]).
      auto trimmed = std::make_shared<v1::ClientFrame>();
      for (const v1::Command& command : batch.frame->batch().commands()) {
        if (packed::LastSeq(command) > applied) {
          *trimmed->mutable_batch()->add_commands() = command;
        }
      }
      resend.push_back(std::move(trimmed));
    }
  }
  for (const auto& frame : resend) {
    // A broken stream: the reader sees it too and resumes again.
    if (writes_done_ || !stream_live_ ||
        !stream_->Write(SerializeAliased(frame))) {
      return;
    }
  }
  // Flush may write directly again; it queued behind write_mu_ meanwhile.
  MutexLock lock(&mu_);
  if (!resend_pending_) resuming_ = false;
}

Session::ReceivedFrame Session::Describe(const v1::ServerFrame& frame) {
  ReceivedFrame out;
  out.seq = frame.seq();
  out.kind = static_cast<int>(frame.kind_case());
  switch (frame.kind_case()) {
    case v1::ServerFrame::kData:
      out.request_id = frame.data().request_id();
      out.offset = frame.data().offset();
      break;
    case v1::ServerFrame::kSyncDone:
      out.request_id = frame.sync_done().request_id();
      break;
    case v1::ServerFrame::kError:
      out.request_id = frame.error().request_id();
      break;
    case v1::ServerFrame::kProfile:
      out.request_id = frame.profile().request_id();
      break;
    default:
      break;
  }
  return out;
}

bool Session::SkipReplayedLocked(const v1::ServerFrame& frame) {
  if (!options_.resume) return false;
  const ReceivedFrame got = Describe(frame);
  if (!replay_skip_.empty()) {
    const ReceivedFrame& want = replay_skip_.front();
    if (got.seq == want.seq && got.kind == want.kind &&
        got.request_id == want.request_id && got.offset == want.offset) {
      replay_skip_.pop_front();
      return true;  // handled before the stream broke
    }
    replay_skip_.clear();  // not the replay expected: handle it normally
  }
  if (frame.has_ack()) {
    if (frame.ack().last_seq() > acked_seq_) received_since_ack_.clear();
  } else if (frame.seq() > acked_seq_) {
    received_since_ack_.push_back(got);
  }
  return false;
}

int Session::resumes() const {
  MutexLock lock(&mu_);
  return resumes_;
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

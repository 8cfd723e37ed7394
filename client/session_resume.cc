// Resuming a session whose stream broke (docs/protocol.md "Resume"); the
// calls themselves are started by client/stream_opener.h. See
// client/session.h.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/session.h"
#include "proto/frame_buffer.h"
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

absl::StatusOr<StreamOpener::Opened> Session::OpenStream(
    const v1::Hello& hello, absl::Duration timeout) {
  return opener_.Open(hello, timeout, [this](grpc::ClientContext* attempt) {
    MutexLock lock(&mu_);
    if (attempt != nullptr && closing_) return ClosedError();
    attempt_context_ = attempt;  // Close() cancels it
    return absl::OkStatus();
  });
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
    transport_->FillResumeHello(&hello);
    const absl::Duration left =
        std::max(deadline - absl::Now(), absl::Milliseconds(1));
    ++attempts;
    absl::StatusOr<StreamOpener::Opened> opened =
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

absl::Status Session::Adopt(StreamOpener::Opened opened) {
  transport_->Resumed(opened.welcome);
  MutexLock write_lock(&write_mu_);
  bool give_up;
  {
    MutexLock lock(&mu_);
    give_up = closing_ || writes_done_;
    if (!give_up) {
      stream_.reset();  // before its context
      context_ = std::move(opened.context);
      stream_ = std::move(opened.stream);
      // The flusher resends (not this thread: the reader must keep reading
      // the replay, or a daemon blocked on sending it stops reading too);
      // Flush only queues until it is done (resuming_ stays set).
      replay_.Resumed(opened.welcome.resumed_applied_seq());
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
  std::vector<ReplayLog::Frame> resend;
  {
    MutexLock lock(&mu_);
    if (!replay_.resend_pending()) return;
    resend = replay_.TakeResend();
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
  if (!replay_.resend_pending()) resuming_ = false;
}

int Session::resumes() const {
  MutexLock lock(&mu_);
  return replay_.resumes();
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

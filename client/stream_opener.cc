// Starting a Tensord.Session call: Hello out, Welcome in, within a
// deadline. See client/stream_opener.h.
#include "client/stream_opener.h"

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/status.h"
#include "proto/frame_buffer.h"
#include "runtime/core/mutex.h"

namespace tensord {
inline namespace client {
namespace internal {

StreamOpener::StreamOpener(std::shared_ptr<grpc::Channel> channel,
                           std::string token, std::string address)
    : channel_(std::move(channel)),
      method_("/tensord.v1.Tensord/Session",
              grpc::internal::RpcMethod::BIDI_STREAMING, channel_),
      token_(std::move(token)),
      address_(std::move(address)) {}

absl::StatusOr<StreamOpener::Opened> StreamOpener::Open(
    const v1::Hello& hello, absl::Duration timeout,
    absl::FunctionRef<absl::Status(grpc::ClientContext*)> track) const {
  const bool resuming = !hello.resume_session_id().empty();
  Opened opened;
  opened.context = std::make_unique<grpc::ClientContext>();
  if (!token_.empty()) {
    opened.context->AddMetadata("authorization", "Bearer " + token_);
  }
  // A resume waits for the channel to reconnect (bounded by the watchdog).
  if (resuming) opened.context->set_wait_for_ready(true);
  absl::Status tracked = track(opened.context.get());
  if (!tracked.ok()) return tracked;
  // What the generated stub does for a typed stream, with byte buffers.
  opened.stream.reset(
      grpc::internal::ClientReaderWriterFactory<
          grpc::ByteBuffer, grpc::ByteBuffer>::Create(channel_.get(), method_,
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
  track(nullptr).IgnoreError();
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

}  // namespace internal
}  // namespace client
}  // namespace tensord

// Starts the Tensord.Session calls of a C++ client session: the first one
// (Session::Open) and each resume's (docs/protocol.md "Resume"). A call is
// a bidi stream of raw byte buffers, serialised and parsed by the session
// rather than by gRPC's protobuf glue: a Put chunk goes out without another
// copy (Note [Aliased payloads], proto/frame_buffer.h) and a Data chunk's
// bytes go straight to their download (Note [Data frames in place],
// client/data_frame.h).
//
// Ownership: a member of Session; it shares the session's channel, which
// outlives every call it started.
// Thread safety: Open is const and may run on any thread (Session::Open's,
// then the reader's for a resume).
#ifndef TENSORD_CLIENT_STREAM_OPENER_H_
#define TENSORD_CLIENT_STREAM_OPENER_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/sync_stream.h>

#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {
namespace internal {

class StreamOpener {
 public:
  using Stream = grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;
  // A started Tensord.Session call that got its Welcome.
  struct Opened {
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<Stream> stream;
    v1::Welcome welcome;
  };

  // Calls on `channel` to the daemon at `address` (for messages), with
  // `token` as the bearer token when non-empty.
  StreamOpener(std::shared_ptr<grpc::Channel> channel, std::string token,
               std::string address);

  // Starts a call, sends `hello` and reads the Welcome within `timeout`. A
  // refused Hello is the daemon's status prefixed with what was refused; a
  // resume (hello.resume_session_id set) answered with a new session is
  // FAILED_PRECONDITION. `track` is shown the call's context before the
  // call starts (a non-OK status gives up with it: the session is closing)
  // and null once the Hello/Welcome exchange is over, so that the session
  // can cancel an attempt in progress (Session::Close).
  absl::StatusOr<Opened> Open(
      const v1::Hello& hello, absl::Duration timeout,
      absl::FunctionRef<absl::Status(grpc::ClientContext*)> track) const;

 private:
  const std::shared_ptr<grpc::Channel> channel_;
  const grpc::internal::RpcMethod method_;  // Tensord.Session
  const std::string token_;
  const std::string address_;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_STREAM_OPENER_H_

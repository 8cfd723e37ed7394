// The gRPC adapter for Tensord.Session: a callback-API bidi reactor per
// stream that feeds the transport-agnostic Session and writes its frames.
// The only server file (with grpc_admin) that includes grpcpp.
#ifndef TENSORD_SERVER_GRPC_STREAM_H_
#define TENSORD_SERVER_GRPC_STREAM_H_

#include <memory>

#include "absl/time/time.h"
#include "proto/tensord.grpc.pb.h"
#include "server/session_manager.h"

namespace tensord {

// Note [Unauthenticated streams]: a stream holds gRPC and daemon resources
// before its Hello is checked, so it gets `hello_timeout` to send one
// (DEADLINE_EXCEEDED after), and at most `max_unauthenticated` streams may
// be waiting for theirs or for their refusal at once (RESOURCE_EXHAUSTED
// beyond). A wrong token's refusal is held back (Note [Failed
// authentications], server/auth_failures.h) while the stream still counts.
struct StreamGuards {
  absl::Duration hello_timeout = absl::Seconds(10);
  int max_unauthenticated = 256;
};

class HelloGate;  // grpc_stream.cc

// The stream carries raw byte buffers: frames are parsed and serialised in
// grpc_stream.cc, so that a Data chunk goes out without another copy of its
// bytes (Note [Aliased payloads], proto/frame_buffer.h).
class TensordService final
    : public v1::Tensord::WithRawCallbackMethod_Session<v1::Tensord::Service> {
 public:
  explicit TensordService(SessionManager* sessions,
                          StreamGuards guards = StreamGuards());
  ~TensordService() override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Session(
      grpc::CallbackServerContext* context) override;

 private:
  SessionManager* sessions_;
  std::unique_ptr<HelloGate> gate_;
};

// Converts between absl and gRPC statuses (codes map one to one).
grpc::Status ToGrpcStatus(const absl::Status& status);
// The bearer token of a call ("authorization: Bearer TOKEN"), or "".
std::string BearerToken(const grpc::ServerContextBase& context);

}  // namespace tensord

#endif  // TENSORD_SERVER_GRPC_STREAM_H_

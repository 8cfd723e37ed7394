// The gRPC adapter for Tensord.Session: a callback-API bidi reactor per
// stream that feeds the transport-agnostic Session and writes its frames.
// The only server file (with grpc_admin) that includes grpcpp.
#ifndef TENSORD_SERVER_GRPC_STREAM_H_
#define TENSORD_SERVER_GRPC_STREAM_H_

#include <memory>

#include "absl/time/time.h"
#include "proto/tensord.grpc.pb.h"
#include "server/auth_gate.h"
#include "server/session_manager.h"

namespace tensord {

// The stream carries raw byte buffers: frames are parsed and serialised in
// grpc_stream.cc, so that a Data chunk goes out without another copy of its
// bytes (Note [Aliased payloads], proto/frame_buffer.h).
class TensordService final
    : public v1::Tensord::WithRawCallbackMethod_Session<v1::Tensord::Service> {
 public:
  // `gate` (Note [Unauthenticated streams]) is shared with the Admin
  // service and must outlive the server.
  TensordService(SessionManager* sessions, AuthGate* gate)
      : sessions_(sessions), gate_(gate) {}
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Session(
      grpc::CallbackServerContext* context) override;

 private:
  SessionManager* sessions_;
  AuthGate* const gate_;
};

// Converts between absl and gRPC statuses (codes map one to one).
grpc::Status ToGrpcStatus(const absl::Status& status);
// The bearer token of a call ("authorization: Bearer TOKEN"), or "".
std::string BearerToken(const grpc::ServerContextBase& context);

}  // namespace tensord

#endif  // TENSORD_SERVER_GRPC_STREAM_H_

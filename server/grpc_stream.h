// The gRPC adapter for Tensord.Session: a callback-API bidi reactor per
// stream that feeds the transport-agnostic Session and writes its frames.
// The only server file (with grpc_admin) that includes grpcpp.
#ifndef TENSORD_SERVER_GRPC_STREAM_H_
#define TENSORD_SERVER_GRPC_STREAM_H_

#include "proto/tensord.grpc.pb.h"
#include "server/session_manager.h"

namespace tensord {

class TensordService final : public v1::Tensord::CallbackService {
 public:
  explicit TensordService(SessionManager* sessions) : sessions_(sessions) {}
  grpc::ServerBidiReactor<v1::ClientFrame, v1::ServerFrame>* Session(
      grpc::CallbackServerContext* context) override;

 private:
  SessionManager* sessions_;
};

// Converts between absl and gRPC statuses (codes map one to one).
grpc::Status ToGrpcStatus(const absl::Status& status);
// The bearer token of a call ("authorization: Bearer TOKEN"), or "".
std::string BearerToken(const grpc::ServerContextBase& context);

}  // namespace tensord

#endif  // TENSORD_SERVER_GRPC_STREAM_H_

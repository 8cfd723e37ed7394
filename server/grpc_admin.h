// The Admin service (tensorctl's backend) over the SessionManager. Every call
// needs an admin token unless the daemon runs --insecure; a call without one
// is refused as a wrong token on the session stream is: logged (rate
// limited) and answered late (Note [Failed authentications]), which is why
// the service uses gRPC's callback API (the delay holds no thread).
#ifndef TENSORD_SERVER_GRPC_ADMIN_H_
#define TENSORD_SERVER_GRPC_ADMIN_H_

#include <string>

#include "absl/time/time.h"
#include "proto/admin.grpc.pb.h"
#include "server/auth_gate.h"
#include "server/session_manager.h"

namespace tensord {

class AdminService final : public v1::Admin::CallbackService {
 public:
  // `gate` is shared with the session service and must outlive the server.
  AdminService(SessionManager* sessions, std::string listen_address,
               AuthGate* gate)
      : sessions_(sessions),
        listen_address_(std::move(listen_address)),
        gate_(gate) {}

  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* ctx,
                                        const v1::ListDevicesRequest*,
                                        v1::ListDevicesResponse* out) override;
  grpc::ServerUnaryReactor* ListSessions(
      grpc::CallbackServerContext* ctx, const v1::ListSessionsRequest*,
      v1::ListSessionsResponse* out) override;
  grpc::ServerUnaryReactor* KillSession(grpc::CallbackServerContext* ctx,
                                        const v1::KillSessionRequest* req,
                                        v1::KillSessionResponse* out) override;
  grpc::ServerUnaryReactor* ListUsers(grpc::CallbackServerContext* ctx,
                                      const v1::ListUsersRequest*,
                                      v1::ListUsersResponse* out) override;
  grpc::ServerUnaryReactor* ServerInfo(grpc::CallbackServerContext* ctx,
                                       const v1::ServerInfoRequest*,
                                       v1::ServerInfoResponse* out) override;
  grpc::ServerUnaryReactor* MemoryStats(grpc::CallbackServerContext* ctx,
                                        const v1::MemoryStatsRequest* req,
                                        v1::MemoryStatsResponse* out) override;
  grpc::ServerUnaryReactor* MemorySnapshot(
      grpc::CallbackServerContext* ctx, const v1::MemorySnapshotRequest* req,
      v1::MemorySnapshotResponse* out) override;
  grpc::ServerUnaryReactor* EmptyCache(grpc::CallbackServerContext* ctx,
                                       const v1::EmptyCacheRequest* req,
                                       v1::EmptyCacheResponse* out) override;
  grpc::ServerUnaryReactor* RecordMemoryHistory(
      grpc::CallbackServerContext* ctx,
      const v1::RecordMemoryHistoryRequest* req,
      v1::RecordMemoryHistoryResponse* out) override;
  grpc::ServerUnaryReactor* ProfileSession(
      grpc::CallbackServerContext* ctx, const v1::ProfileSessionRequest* req,
      v1::ProfileSessionResponse* out) override;

 private:
  // OK for an admin's token; else the refusal, counted (Note [Daemon
  // counters]).
  absl::Status CheckAdmin(const grpc::CallbackServerContext& ctx) const;
  // Answers `refusal` after the caller's host's delay.
  grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* ctx,
                                   const absl::Status& refusal);
  // Runs `body` (returns the call's grpc::Status) for an admin, or refuses.
  template <typename Body>
  grpc::ServerUnaryReactor* Serve(grpc::CallbackServerContext* ctx, Body body) {
    if (absl::Status admin = CheckAdmin(*ctx); !admin.ok()) {
      return Refuse(ctx, admin);
    }
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(body());
    return reactor;
  }

  SessionManager* sessions_;
  const std::string listen_address_;
  AuthGate* const gate_;
  const absl::Time started_ = absl::Now();
};

}  // namespace tensord

#endif  // TENSORD_SERVER_GRPC_ADMIN_H_

// The Admin service (tensorctl's backend) over the SessionManager. Every call
// needs an admin token unless the daemon runs --insecure.
#ifndef TENSORD_SERVER_GRPC_ADMIN_H_
#define TENSORD_SERVER_GRPC_ADMIN_H_

#include <string>

#include "absl/time/time.h"
#include "proto/admin.grpc.pb.h"
#include "server/session_manager.h"

namespace tensord {

class AdminService final : public v1::Admin::Service {
 public:
  AdminService(SessionManager* sessions, std::string listen_address)
      : sessions_(sessions), listen_address_(std::move(listen_address)) {}

  grpc::Status ListDevices(grpc::ServerContext* ctx,
                           const v1::ListDevicesRequest*,
                           v1::ListDevicesResponse* out) override;
  grpc::Status ListSessions(grpc::ServerContext* ctx,
                            const v1::ListSessionsRequest*,
                            v1::ListSessionsResponse* out) override;
  grpc::Status KillSession(grpc::ServerContext* ctx,
                           const v1::KillSessionRequest* req,
                           v1::KillSessionResponse* out) override;
  grpc::Status ListUsers(grpc::ServerContext* ctx, const v1::ListUsersRequest*,
                         v1::ListUsersResponse* out) override;
  grpc::Status ServerInfo(grpc::ServerContext* ctx,
                          const v1::ServerInfoRequest*,
                          v1::ServerInfoResponse* out) override;
  grpc::Status MemoryStats(grpc::ServerContext* ctx,
                           const v1::MemoryStatsRequest* req,
                           v1::MemoryStatsResponse* out) override;
  grpc::Status MemorySnapshot(grpc::ServerContext* ctx,
                              const v1::MemorySnapshotRequest* req,
                              v1::MemorySnapshotResponse* out) override;
  grpc::Status EmptyCache(grpc::ServerContext* ctx,
                          const v1::EmptyCacheRequest* req,
                          v1::EmptyCacheResponse* out) override;
  grpc::Status RecordMemoryHistory(
      grpc::ServerContext* ctx, const v1::RecordMemoryHistoryRequest* req,
      v1::RecordMemoryHistoryResponse* out) override;
  grpc::Status ProfileSession(grpc::ServerContext* ctx,
                              const v1::ProfileSessionRequest* req,
                              v1::ProfileSessionResponse* out) override;

 private:
  grpc::Status CheckAdmin(grpc::ServerContext* ctx) const;

  SessionManager* sessions_;
  const std::string listen_address_;
  const absl::Time started_ = absl::Now();
};

}  // namespace tensord

#endif  // TENSORD_SERVER_GRPC_ADMIN_H_

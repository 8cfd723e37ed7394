#include "server/grpc_admin.h"

#include "absl/strings/str_cat.h"
#include "runtime/cuda_discovery.h"
#include "runtime/ops/op_table.h"
#include "server/grpc_stream.h"

namespace tensord {

grpc::Status AdminService::CheckAdmin(grpc::ServerContext* ctx) const {
  auto user = sessions_->auth()->AuthenticateAdmin(BearerToken(*ctx));
  return user.ok() ? grpc::Status::OK : ToGrpcStatus(user.status());
}

grpc::Status AdminService::ListDevices(grpc::ServerContext* ctx,
                                       const v1::ListDevicesRequest*,
                                       v1::ListDevicesResponse* out) {
  if (auto s = CheckAdmin(ctx); !s.ok()) return s;
  *out = sessions_->Devices();
  return grpc::Status::OK;
}

grpc::Status AdminService::ListSessions(grpc::ServerContext* ctx,
                                        const v1::ListSessionsRequest*,
                                        v1::ListSessionsResponse* out) {
  if (auto s = CheckAdmin(ctx); !s.ok()) return s;
  for (auto& info : sessions_->List()) *out->add_sessions() = std::move(info);
  return grpc::Status::OK;
}

grpc::Status AdminService::KillSession(grpc::ServerContext* ctx,
                                       const v1::KillSessionRequest* req,
                                       v1::KillSessionResponse*) {
  if (auto s = CheckAdmin(ctx); !s.ok()) return s;
  return ToGrpcStatus(sessions_->Kill(req->session_id()));
}

grpc::Status AdminService::ServerInfo(grpc::ServerContext* ctx,
                                      const v1::ServerInfoRequest*,
                                      v1::ServerInfoResponse* out) {
  if (auto s = CheckAdmin(ctx); !s.ok()) return s;
  out->set_version(kServerVersion);
  out->set_protocol_version(kProtocolVersion);
  out->set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - started_));
  out->set_active_sessions(sessions_->size());
  out->set_num_ops(OpTable().size());
  out->set_listen_address(listen_address_);
  out->set_cuda_built(CudaBuilt());
  out->set_default_device(sessions_->devices()->default_device()->name());
  return grpc::Status::OK;
}

grpc::Status AdminService::MemoryStats(grpc::ServerContext* ctx,
                                       const v1::MemoryStatsRequest*,
                                       v1::MemoryStatsResponse*) {
  if (auto s = CheckAdmin(ctx); !s.ok()) return s;
  return grpc::Status(
      grpc::StatusCode::UNIMPLEMENTED,
      "memory statistics are not wired into the Admin service yet");
}

grpc::Status AdminService::MemorySnapshot(grpc::ServerContext* ctx,
                                          const v1::MemorySnapshotRequest*,
                                          v1::MemorySnapshotResponse*) {
  if (auto s = CheckAdmin(ctx); !s.ok()) return s;
  return grpc::Status(
      grpc::StatusCode::UNIMPLEMENTED,
      "memory snapshots are not wired into the Admin service yet");
}

grpc::Status AdminService::EmptyCache(grpc::ServerContext* ctx,
                                      const v1::EmptyCacheRequest* req,
                                      v1::EmptyCacheResponse* out) {
  if (auto s = CheckAdmin(ctx); !s.ok()) return s;
  int64_t released = 0;
  for (const auto& d : sessions_->devices()->devices()) {
    if (req->device().empty() || req->device() == d->name()) {
      released += d->allocator()->EmptyCache();
    }
  }
  out->set_released_bytes(released);
  return grpc::Status::OK;
}

}  // namespace tensord

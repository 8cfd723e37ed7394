#include "server/grpc_admin.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/cuda_discovery.h"
#include "runtime/memory/snapshot.h"
#include "runtime/ops/op_table.h"
#include "server/admin_memory.h"
#include "server/grpc_stream.h"
#include "server/user_usage.h"
#include "server/version.h"

namespace tensord {

absl::Status AdminService::CheckAdmin(
    const grpc::CallbackServerContext& ctx) const {
  const std::string token = BearerToken(ctx);
  auto user = sessions_->auth()->AuthenticateAdmin(token);
  if (user.ok()) return absl::OkStatus();
  // Note [Daemon counters]: a user's token without admin rights counts
  // against that user; a token no user has, against no one.
  auto known = sessions_->auth()->Authenticate(token);
  sessions_->counters().CountAuthFailure(
      known.ok() ? AuthFailure::kNotAdmin : AuthFailure::kUnknownToken,
      known.ok() ? sessions_->counters().ForUser(known->name) : nullptr);
  return user.status();
}

grpc::ServerUnaryReactor* AdminService::Refuse(grpc::CallbackServerContext* ctx,
                                               const absl::Status& refusal) {
  // Note [Failed authentications]: logged (rate limited) and answered after
  // the host's delay, as on the session stream; no thread waits meanwhile.
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  const grpc::Status status = ToGrpcStatus(refusal);
  gate_->RefuseLater("Admin authentication", ctx->peer(), refusal,
                     [reactor, status] { reactor->Finish(status); });
  return reactor;
}

grpc::ServerUnaryReactor* AdminService::ListDevices(
    grpc::CallbackServerContext* ctx, const v1::ListDevicesRequest*,
    v1::ListDevicesResponse* out) {
  return Serve(ctx, [&]() -> grpc::Status {
    *out = sessions_->Devices();
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AdminService::ListSessions(
    grpc::CallbackServerContext* ctx, const v1::ListSessionsRequest*,
    v1::ListSessionsResponse* out) {
  return Serve(ctx, [&]() -> grpc::Status {
    for (auto& info : sessions_->List()) *out->add_sessions() = std::move(info);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AdminService::KillSession(
    grpc::CallbackServerContext* ctx, const v1::KillSessionRequest* req,
    v1::KillSessionResponse*) {
  return Serve(ctx, [&]() -> grpc::Status {
    return ToGrpcStatus(sessions_->Kill(req->session_id(), req->reason()));
  });
}

grpc::ServerUnaryReactor* AdminService::ListUsers(
    grpc::CallbackServerContext* ctx, const v1::ListUsersRequest*,
    v1::ListUsersResponse* out) {
  return Serve(ctx, [&]() -> grpc::Status {
    for (auto& user : SumUsers(sessions_->List(), sessions_->counters(),
                               *sessions_->auth())) {
      *out->add_users() = std::move(user);
    }
    out->set_unknown_token_failures(
        sessions_->counters().auth_failures(AuthFailure::kUnknownToken));
    out->set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - started_));
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AdminService::ServerInfo(
    grpc::CallbackServerContext* ctx, const v1::ServerInfoRequest*,
    v1::ServerInfoResponse* out) {
  return Serve(ctx, [&]() -> grpc::Status {
    out->set_version(kServerVersion);
    out->set_protocol_version(kProtocolVersion);
    out->set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - started_));
    out->set_active_sessions(sessions_->size());
    out->set_num_ops(OpTable().size());
    out->set_listen_address(listen_address_);
    out->set_cuda_built(CudaBuilt());
    out->set_default_device(sessions_->devices()->default_device()->name());
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AdminService::MemoryStats(
    grpc::CallbackServerContext* ctx, const v1::MemoryStatsRequest* req,
    v1::MemoryStatsResponse* out) {
  return Serve(ctx, [&]() -> grpc::Status {
    for (const auto& d : sessions_->devices()->devices()) {
      if (!req->device().empty() && req->device() != d->name()) continue;
      AddMemoryStats(
          *d, [this](uint64_t n) { return sessions_->SessionIdOf(n); }, out);
    }
    if (out->devices_size() == 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("no device '", req->device(), "'"));
    }
    // Host memory charged to the cpu quota: shown with every device or cpu.
    if (req->device().empty() || req->device() == "cpu") {
      SetSharedBufferStats(sessions_->List(), out);
    }
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AdminService::MemorySnapshot(
    grpc::CallbackServerContext* ctx, const v1::MemorySnapshotRequest* req,
    v1::MemorySnapshotResponse* out) {
  return Serve(ctx, [&]() -> grpc::Status {
    const std::string name =
        req->device().empty() ? sessions_->devices()->default_device()->name()
                              : req->device();
    Device* device = sessions_->devices()->Find(name);
    if (device == nullptr) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("no device '", name, "'"));
    }
    // One snapshot feeds both forms, so the JSON and the structured segments
    // always describe the same instant.
    const tensord::MemorySnapshot snapshot = device->allocator()->Snapshot();
    // Events name sessions as tensorctl sessions does (Note [Memory history]).
    out->set_json(SnapshotToJson(
        snapshot, [this](uint64_t n) { return sessions_->SessionIdOf(n); }));
    out->set_device(name);
    std::map<uint64_t, std::string> session_ids;  // one lookup per session
    for (const SegmentSnapshot& s : snapshot.segments) {
      v1::MemorySegment* segment = out->add_segments();
      segment->set_address(s.address);
      segment->set_total_size(s.total_size);
      segment->set_allocated_size(s.allocated_size);
      segment->set_active_size(s.active_size);
      segment->set_requested_size(s.requested_size);
      segment->set_stream(s.stream);
      segment->set_segment_type(s.is_small ? "small" : "large");
      for (const BlockSnapshot& b : s.blocks) {
        v1::MemoryBlock* block = segment->add_blocks();
        block->set_address(b.address);
        block->set_size(b.size);
        block->set_requested_size(b.requested_size);
        block->set_state(BlockStateName(b.state));
        if (b.owner_session.has_value()) {
          auto [it, inserted] = session_ids.try_emplace(*b.owner_session);
          if (inserted) it->second = sessions_->SessionIdOf(*b.owner_session);
          block->set_session_id(it->second);
        }
      }
    }
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AdminService::EmptyCache(
    grpc::CallbackServerContext* ctx, const v1::EmptyCacheRequest* req,
    v1::EmptyCacheResponse* out) {
  return Serve(ctx, [&]() -> grpc::Status {
    if (!req->device().empty() &&
        sessions_->devices()->Find(req->device()) == nullptr) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("no device '", req->device(), "'"));
    }
    for (const auto& d : sessions_->devices()->devices()) {
      if (req->device().empty() || req->device() == d->name()) {
        EmptyDeviceCaches(*d, out);
      }
    }
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AdminService::RecordMemoryHistory(
    grpc::CallbackServerContext* ctx, const v1::RecordMemoryHistoryRequest* req,
    v1::RecordMemoryHistoryResponse* out) {
  return Serve(ctx, [&]() -> grpc::Status {
    if (!req->device().empty() &&
        sessions_->devices()->Find(req->device()) == nullptr) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("no device '", req->device(), "'"));
    }
    for (const auto& d : sessions_->devices()->devices()) {
      if (!req->device().empty() && req->device() != d->name()) continue;
      if (absl::Status s = tensord::RecordMemoryHistory(*d, *req, out);
          !s.ok()) {
        return ToGrpcStatus(s);
      }
    }
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AdminService::ProfileSession(
    grpc::CallbackServerContext* ctx, const v1::ProfileSessionRequest* req,
    v1::ProfileSessionResponse* out) {
  return Serve(ctx, [&]() -> grpc::Status {
    auto session = sessions_->Find(req->session_id());
    if (!session.ok()) return ToGrpcStatus(session.status());
    OpProfiler& profiler = (*session)->profiler();
    out->set_was_enabled(profiler.enabled());
    switch (req->action()) {
      case v1::ProfileSessionRequest::START:
        profiler.SetEnabled(true);
        return grpc::Status::OK;
      case v1::ProfileSessionRequest::STOP:
        profiler.SetEnabled(false);
        break;
      case v1::ProfileSessionRequest::FETCH:
        break;
      default:
        return grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            "ProfileSession: action must be START, STOP or FETCH");
    }
    profiler.Fill(req->clear(), out->mutable_profile());
    return grpc::Status::OK;
  });
}

}  // namespace tensord

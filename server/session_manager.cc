#include "server/session_manager.h"

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/ops/op_table.h"
#include "server/proto_convert.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace {

std::string RandomHex(int bytes) {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen = new absl::BitGen();
  absl::MutexLock lock(&mu);
  std::string out;
  for (int i = 0; i < bytes; ++i) {
    absl::StrAppendFormat(&out, "%02x", absl::Uniform<int>(*gen, 0, 256));
  }
  return out;
}

}  // namespace

SessionManager::SessionManager(DeviceRegistry* devices, Authenticator* auth)
    : devices_(devices), auth_(auth) {}

absl::StatusOr<std::shared_ptr<Session>> SessionManager::Open(
    const v1::Hello& hello, absl::string_view metadata_token,
    absl::string_view peer, std::shared_ptr<FrameSink> sink) {
  if (hello.protocol_version() != kProtocolVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("protocol version mismatch: the client speaks version ",
                     hello.protocol_version(), ", this tensord ",
                     kServerVersion, " speaks version ", kProtocolVersion,
                     "; upgrade the client or the daemon"));
  }
  if (!hello.resume_session_id().empty()) {
    return absl::UnimplementedError(
        "resuming a detached session is not supported by this tensord yet");
  }
  const absl::string_view token =
      hello.token().empty() ? metadata_token : absl::string_view(hello.token());
  auto user = auth_->Authenticate(token);
  if (!user.ok()) return user.status();
  SessionParams params;
  params.id = RandomHex(8);
  params.resume_secret = RandomHex(16);
  params.number = next_number_.fetch_add(1);
  params.user = user->name;
  params.client_name = hello.client_name();
  params.peer = std::string(peer);
  params.devices = devices_;
  params.chunk_bytes = kChunkBytes;
  // Quotas are checked by the allocators before allocating.
  if (user->quota_bytes > 0) {
    for (const auto& d : devices_->devices()) {
      d->allocator()->SetSessionQuota(params.number, user->quota_bytes);
    }
  }
  auto session = std::make_shared<Session>(params, sink);
  v1::ServerFrame welcome;
  *welcome.mutable_welcome() = MakeWelcome(*session);
  sink->Send(std::move(welcome));
  {
    absl::MutexLock lock(&mu_);
    sessions_[params.id] = session;
  }
  spdlog::info("session {} opened by {} ({}) from {}", params.id, params.user,
               params.client_name, params.peer);
  return session;
}

v1::Welcome SessionManager::MakeWelcome(const Session& session) const {
  v1::Welcome w;
  w.set_session_id(session.params().id);
  w.set_resume_secret(session.params().resume_secret);
  for (const auto& d : devices_->devices()) {
    *w.add_devices() = DeviceToProto(d->description());
  }
  const auto& table = OpTable();
  for (uint32_t i = 0; i < table.size(); ++i) {
    *w.add_ops() = OpSchemaToProto(i, table[i]);
  }
  w.set_protocol_version(kProtocolVersion);
  w.set_server_version(kServerVersion);
  w.set_chunk_bytes(kChunkBytes);
  w.set_max_frame_bytes(kMaxFrameBytes);
  w.set_default_device(devices_->default_device()->name());
  return w;
}

void SessionManager::Remove(const std::string& id) {
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    session = std::move(it->second);
    sessions_.erase(it);
  }
  // `session` may be the last reference: destroyed here, outside the lock.
  if (session) {
    for (const auto& d : devices_->devices()) {
      d->allocator()->SetSessionQuota(session->params().number, -1);
    }
  }
}

absl::Status SessionManager::Kill(const std::string& id) {
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) {
      return absl::NotFoundError(absl::StrCat("no session '", id, "'"));
    }
    session = it->second;
  }
  session->Kill(absl::AbortedError("session killed by an administrator"));
  return absl::OkStatus();
}

void SessionManager::Shutdown() {
  std::vector<std::shared_ptr<Session>> all;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, s] : sessions_) all.push_back(s);
  }
  for (auto& s : all)
    s->Kill(absl::UnavailableError("tensord is shutting down"));
  for (auto& s : all) s->WaitDone();
}

std::vector<v1::SessionInfo> SessionManager::List() const {
  std::vector<std::shared_ptr<Session>> all;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, s] : sessions_) all.push_back(s);
  }
  std::vector<v1::SessionInfo> out;
  for (const auto& s : all) out.push_back(s->Info());
  return out;
}

v1::ListDevicesResponse SessionManager::Devices() const {
  v1::ListDevicesResponse out;
  for (const auto& d : devices_->devices()) {
    *out.add_devices() = DeviceToProto(d->description());
  }
  return out;
}

std::string SessionManager::SessionIdOf(uint64_t number) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, s] : sessions_) {
    if (s->params().number == number) return id;
  }
  return absl::StrCat("#", number);  // ended, or the daemon itself (0)
}

size_t SessionManager::size() const {
  absl::MutexLock lock(&mu_);
  return sessions_.size();
}

}  // namespace tensord

#include "server/session_manager.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/display_text.h"
#include "runtime/core/status_macros.h"
#include "server/proto_convert.h"
#include "server/secure_random.h"
#include "server/version.h"
#include "server/welcome.h"
#include "server/wire_limits.h"
#include "spdlog/spdlog.h"

namespace tensord {

SessionManager::SessionManager(DeviceRegistry* devices, Authenticator* auth,
                               SessionLimits limits)
    : limits_(limits),
      devices_(devices),
      auth_(auth),
      reaper_([this] { ReaperLoop(); }) {}

SessionManager::~SessionManager() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  reaper_.join();
}

void SessionManager::ReaperLoop() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    absl::Time next = absl::InfiniteFuture();
    for (const auto& [id, deadline] : deadlines_)
      next = std::min(next, deadline);
    // Wakes at the earliest deadline, or when a detach/stop changes things.
    const uint64_t seen = deadlines_changed_;
    auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || deadlines_changed_ != seen;
    };
    mu_.AwaitWithDeadline(absl::Condition(&changed), next);
    if (stopping_) break;
    const absl::Time now = absl::Now();
    std::vector<std::shared_ptr<Session>> expired;
    for (auto it = deadlines_.begin(); it != deadlines_.end();) {
      auto current = it++;
      if (current->second > now) continue;
      auto s = sessions_.find(current->first);
      if (s != sessions_.end() && s->second->detached()) {
        expired.push_back(s->second);
        sessions_.erase(s);
      }
      deadlines_.erase(current);
    }
    mu_.Unlock();  // killing joins nothing, but runs outside the registry lock
    for (auto& session : expired) {
      spdlog::info("session {} was not resumed within {}: releasing it",
                   session->params().id,
                   absl::FormatDuration(limits_.resume_grace));
      session->Kill(absl::DeadlineExceededError("resume grace period over"));
      for (const auto& d : devices_->devices()) {
        d->allocator()->EndSession(session->params().number);
      }
    }
    expired.clear();  // last references: executors finish and free memory
    mu_.Lock();
  }
}

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
  TD_RETURN_IF_ERROR(CheckHello(hello));  // Note [Wire limits]
  const absl::string_view token =
      hello.token().empty() ? metadata_token : absl::string_view(hello.token());
  auto user = auth_->Authenticate(token);
  if (!user.ok()) {
    counters_.CountAuthFailure(AuthFailure::kUnknownToken, nullptr);
    return user.status();
  }
  if (!hello.resume_session_id().empty()) return Resume(hello, *user, sink);
  TD_RETURN_IF_ERROR(ReserveSlot(user->name));
  auto session = NewSession(hello, *user, peer);
  if (!session.ok()) {
    ReleaseSlot(user->name);
    return session.status();
  }
  const SessionParams& params = (*session)->params();
  // Registered before the Welcome goes out: a client that connects again as
  // soon as it has its Welcome must be counted against the per-user cap.
  {
    MutexLock lock(&mu_);
    sessions_[params.id] = *session;
    ReleaseSlotLocked(user->name);  // the session itself counts from now on
  }
  v1::ServerFrame welcome;
  *welcome.mutable_welcome() =
      MakeWelcome(**session, *user, *devices_, cma_socket(), bulk_port_.load());
  absl::Status attached = (*session)->Attach(sink, 0, std::move(welcome));
  if (!attached.ok()) {
    Remove(params.id);
    return attached;
  }
  spdlog::info("session {} opened by {} ({}) from {}", params.id, params.user,
               params.client_name, params.peer);
  return *std::move(session);
}

// Note [Session cap]: counting a user's sessions and taking a slot happen
// under one lock, and the slot is held until the session is registered (or
// its making failed), so concurrent Hellos cannot all see room for one more.
// Detached sessions stay in sessions_ until resumed or reaped: they count.
absl::Status SessionManager::ReserveSlot(const std::string& user) {
  MutexLock lock(&mu_);
  int count = 0;
  if (auto it = reserved_.find(user); it != reserved_.end()) count = it->second;
  for (const auto& [id, s] : sessions_) {
    if (s->params().user == user) ++count;
  }
  if (count >= limits_.max_sessions_per_user) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "user '", user, "' already has ", count, " sessions (the limit is ",
        limits_.max_sessions_per_user,
        "); close one, or ask the operator to raise --max_sessions_per_user"));
  }
  ++reserved_[user];
  return absl::OkStatus();
}

void SessionManager::ReleaseSlot(const std::string& user) {
  MutexLock lock(&mu_);
  ReleaseSlotLocked(user);
}

void SessionManager::ReleaseSlotLocked(const std::string& user) {
  auto it = reserved_.find(user);
  if (it != reserved_.end() && --it->second <= 0) reserved_.erase(it);
}

absl::StatusOr<std::shared_ptr<Session>> SessionManager::NewSession(
    const v1::Hello& hello, const User& user, absl::string_view peer) {
  SessionParams params;
  TD_ASSIGN_OR_RETURN(params.id, SecureRandomHex(8));
  TD_ASSIGN_OR_RETURN(params.resume_secret, SecureRandomHex(16));
  params.number = next_number_.fetch_add(1);
  params.user = user.name;
  params.client_name = hello.client_name();
  params.peer = std::string(peer);
  params.devices = devices_;
  params.chunk_bytes = kChunkBytes;
  params.max_queued_batches = limits_.max_queued_batches;
  params.max_queued_bytes = limits_.max_queued_bytes;
  params.shared_buffer_bytes = limits_.shared_buffer_bytes;
  params.graph_replay = limits_.graph_replay;
  params.packed_acks = hello.packed_acks();
  params.counters = &counters_;
  params.user_counters = counters_.ForUser(user.name);
  TD_RETURN_IF_ERROR(GrantTransports(hello, user, limits_,
                                     bulk_port_.load() != 0,
                                     !cma_socket().empty(), params));
  // Quotas are per user: the user's sessions share one allocator account,
  // checked by the allocators before allocating. Every session joins it,
  // quota or not, so that a quota a reload sets later counts all of the
  // user's bytes (Note [Tokens reload]).
  if (user.quota_bytes > 0) params.quota_bytes = user.quota_bytes;
  accounts_.Join(user, params.number, *devices_);
  return std::make_shared<Session>(params);
}

absl::StatusOr<std::shared_ptr<Session>> SessionManager::Resume(
    const v1::Hello& hello, const User& user, std::shared_ptr<FrameSink> sink) {
  std::shared_ptr<Session> session;
  {
    MutexLock lock(&mu_);
    auto it = sessions_.find(hello.resume_session_id());
    if (it != sessions_.end()) session = it->second;
  }
  // The same answer for an unknown id and a wrong secret: ids are not oracles.
  if (session == nullptr ||
      !ConstantTimeEquals(session->params().resume_secret,
                          hello.resume_secret()) ||
      session->params().user != user.name) {
    return absl::NotFoundError(
        absl::StrCat("no resumable session '", hello.resume_session_id(),
                     "' for this token and secret (it may have expired after "
                     "the grace period)"));
  }
  if (session->ending()) {
    return absl::FailedPreconditionError(
        absl::StrCat("session '", hello.resume_session_id(),
                     "' is ending and cannot be resumed"));
  }
  // The client holds the secret and is reconnecting: its old stream is dead
  // even if the daemon has not noticed yet, so the new stream takes over.
  if (!session->detached()) session->DetachAny();
  // The resumer may be another process: cross-memory attach binds again.
  if (session->cma() != nullptr) session->cma()->Renew();
  v1::ServerFrame welcome;
  *welcome.mutable_welcome() =
      MakeWelcome(*session, user, *devices_, cma_socket(), bulk_port_.load());
  welcome.mutable_welcome()->set_resumed(true);
  welcome.mutable_welcome()->set_resumed_applied_seq(session->applied_seq());
  absl::Status attached =
      session->Attach(sink, hello.resume_received_seq(), std::move(welcome));
  if (!attached.ok()) return attached;
  {
    MutexLock lock(&mu_);
    deadlines_.erase(session->params().id);
  }
  spdlog::info("session {} resumed by {}", session->params().id, user.name);
  return session;
}

void SessionManager::StreamEnded(const std::shared_ptr<Session>& session,
                                 const FrameSink* sink, bool dropped) {
  if (dropped && !session->ending() &&
      limits_.resume_grace > absl::ZeroDuration()) {
    if (!session->Detach(sink)) return;  // a new stream already resumed it
    spdlog::info("session {} detached: resumable for {}", session->params().id,
                 absl::FormatDuration(limits_.resume_grace));
    MutexLock lock(&mu_);
    deadlines_[session->params().id] = absl::Now() + limits_.resume_grace;
    ++deadlines_changed_;
    return;
  }
  // Detached (the reaper's now) or resumed by another stream: not ours.
  if (!session->AttachedTo(sink)) return;
  session->Kill(absl::CancelledError("the stream ended"));
  Remove(session->params().id);
}

void SessionManager::SetCmaSocket(std::string name) {
  MutexLock lock(&mu_);
  cma_socket_ = std::move(name);
}

std::string SessionManager::cma_socket() const {
  MutexLock lock(&mu_);
  return cma_socket_;
}

std::shared_ptr<Session> SessionManager::FindIf(
    absl::FunctionRef<bool(const Session&)> pred) const {
  MutexLock lock(&mu_);
  for (const auto& [id, s] : sessions_) {
    if (pred(*s)) return s;
  }
  return nullptr;
}

std::shared_ptr<BulkChannel> SessionManager::FindBulk(
    absl::string_view token) const {
  MutexLock lock(&mu_);
  for (const auto& [id, session] : sessions_) {
    const std::string& mine = session->params().bulk_token;
    if (!mine.empty() && ConstantTimeEquals(mine, token)) {
      return session->bulk();
    }
  }
  return nullptr;
}

void SessionManager::Remove(const std::string& id) {
  std::shared_ptr<Session> session;
  {
    MutexLock lock(&mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    session = std::move(it->second);
    sessions_.erase(it);
  }
  // `session` may be the last reference: destroyed here, outside the lock.
  if (session) {
    for (const auto& d : devices_->devices()) {
      d->allocator()->EndSession(session->params().number);
    }
  }
}

absl::StatusOr<std::shared_ptr<Session>> SessionManager::Find(
    const std::string& id) const {
  MutexLock lock(&mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return absl::NotFoundError(absl::StrCat("no session '", id, "'"));
  }
  return it->second;
}

absl::Status SessionManager::Kill(const std::string& id,
                                  absl::string_view reason) {
  if (reason.size() > kMaxKillReasonBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the kill reason has ", reason.size(),
                     " bytes; the limit is ", kMaxKillReasonBytes));
  }
  TD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, Find(id));
  // Note [Client text]: the client shows it as it is; escaped here, it is
  // one line of visible text whatever the operator typed.
  const std::string why =
      reason.empty() ? "session killed by an administrator"
                     : absl::StrCat("session killed by an administrator: ",
                                    EscapeClientText(reason));
  spdlog::info("session {} killed by an administrator{}{}", id,
               reason.empty() ? "" : ": ", std::string(reason));
  session->Kill(absl::AbortedError(why));
  return absl::OkStatus();
}

void SessionManager::Shutdown(absl::Status reason) {
  std::vector<std::shared_ptr<Session>> all;
  {
    MutexLock lock(&mu_);
    deadlines_.clear();
    for (auto& [id, s] : sessions_) all.push_back(s);
  }
  for (auto& s : all) s->Kill(reason);
  for (auto& s : all) s->WaitDone();
}

SessionManager::Evicted SessionManager::EvictUsersIf(
    absl::FunctionRef<bool(const std::string& user)> gone) {
  Evicted out;
  MutexLock lock(&mu_);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    auto current = it++;
    const std::shared_ptr<Session>& s = current->second;
    if (!gone(s->params().user)) continue;
    if (s->detached()) {
      out.detached.push_back(s);
      deadlines_.erase(current->first);
      sessions_.erase(current);
    } else {
      out.open.push_back(s);  // removed as its stream ends
    }
  }
  return out;
}

std::vector<v1::SessionInfo> SessionManager::List() const {
  std::vector<std::shared_ptr<Session>> all;
  {
    MutexLock lock(&mu_);
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
  MutexLock lock(&mu_);
  for (const auto& [id, s] : sessions_) {
    if (s->params().number == number) return id;
  }
  return absl::StrCat("#", number);  // ended, or the daemon itself (0)
}

size_t SessionManager::size() const {
  MutexLock lock(&mu_);
  return sessions_.size();
}

}  // namespace tensord

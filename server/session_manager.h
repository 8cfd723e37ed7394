// The daemon's sessions: opening (version and token checks, the Welcome),
// listing and killing. Transport-agnostic (no grpcpp). Thread-safe.
#ifndef TENSORD_SERVER_SESSION_MANAGER_H_
#define TENSORD_SERVER_SESSION_MANAGER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/admin.pb.h"
#include "runtime/core/mutex.h"
#include "server/auth.h"
#include "server/daemon_counters.h"
#include "server/session.h"
#include "server/user_accounts.h"
#include "server/welcome.h"

namespace tensord {

// The longest reason an operator may give a kill (KillSessionRequest.reason).
inline constexpr size_t kMaxKillReasonBytes = 512;

class SessionManager {
 public:
  SessionManager(DeviceRegistry* devices, Authenticator* auth,
                 SessionLimits limits = SessionLimits());
  ~SessionManager();  // stops the reaper; call Shutdown first

  // Checks `hello` (protocol version, token: from Hello or `metadata_token`)
  // and starts a session whose replies go to `sink`, or resumes the detached
  // session `hello` names (Note [Resume]). The Welcome is the first frame
  // sent to the sink. FAILED_PRECONDITION names both versions;
  // UNAUTHENTICATED for tokens; RESOURCE_EXHAUSTED past the per-user cap.
  absl::StatusOr<std::shared_ptr<Session>> Open(
      const v1::Hello& hello, absl::string_view metadata_token,
      absl::string_view peer, std::shared_ptr<FrameSink> sink);
  // The stream `sink` of `session` ended. `dropped`: it broke (cancelled,
  // not closed by the client), so the session is detached for the grace
  // period; otherwise, or once the session is ending, it is forgotten.
  void StreamEnded(const std::shared_ptr<Session>& session,
                   const FrameSink* sink, bool dropped);
  // Forgets a session.
  void Remove(const std::string& id);
  // The live session `id`; NOT_FOUND if there is none.
  absl::StatusOr<std::shared_ptr<Session>> Find(const std::string& id) const;
  // Ends a session (tensorctl kill); NOT_FOUND if there is none. A
  // non-empty `reason` (the operator's text, at most kMaxKillReasonBytes,
  // else INVALID_ARGUMENT) is escaped and shown in the client's error.
  absl::Status Kill(const std::string& id, absl::string_view reason = "");
  // Ends every session with `reason` and waits for them (daemon shutdown).
  void Shutdown(
      absl::Status reason = absl::UnavailableError("tensord is shutting down"));

  // For Note [Tokens reload] (server/tokens_reload.h): the sessions of the
  // users `gone` names, under one lock so that no resume slips in between:
  // the detached ones are taken out of the registry (their grace period
  // cancelled, memory still held: the caller kills them and leaves their
  // accounts), the open ones stay until their streams end.
  struct Evicted {
    std::vector<std::shared_ptr<Session>> open;
    std::vector<std::shared_ptr<Session>> detached;
  };
  Evicted EvictUsersIf(absl::FunctionRef<bool(const std::string& user)> gone);
  // Every user that opened a session, with its allocator account.
  std::vector<std::pair<std::string, uint64_t>> Accounts() const {
    return accounts_.List();
  }

  std::vector<v1::SessionInfo> List() const;
  v1::ListDevicesResponse Devices() const;
  size_t size() const;
  // The id of the session the allocators know as `number`.
  std::string SessionIdOf(uint64_t number) const;
  Authenticator* auth() const { return auth_; }
  // Note [Daemon counters]: what the sessions and Open count.
  DaemonCounters& counters() { return counters_; }
  // Bulk sockets (server/bulk_socket.h): the port the daemon's BulkListener
  // accepts on (0: none; new sessions that ask get a token while it is set),
  // and the channel of the session holding `token`, or null.
  void SetBulkPort(int port) { bulk_port_.store(port); }
  std::shared_ptr<BulkChannel> FindBulk(absl::string_view token) const;
  // Cross-memory attach (server/cma.h): the name of the daemon's binding
  // socket (server/cma_binder.h; empty: none, and new sessions get no
  // ticket). Tickets are bound by server/cma_ticket_binding.h.
  void SetCmaSocket(std::string name);
  std::string cma_socket() const;
  // The first live session `pred` accepts, or null. `pred` runs under the
  // registry's lock: it must be quick and must not call the manager.
  std::shared_ptr<Session> FindIf(
      absl::FunctionRef<bool(const Session&)> pred) const;
  DeviceRegistry* devices() const { return devices_; }

 private:
  // Note [Session cap]: takes one of `user`'s --max_sessions_per_user slots
  // (RESOURCE_EXHAUSTED if none is left) until the session is registered or
  // ReleaseSlot gives it back.
  absl::Status ReserveSlot(const std::string& user);
  void ReleaseSlot(const std::string& user);
  void ReleaseSlotLocked(const std::string& user)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A new session for `user` (ids and secrets drawn, quota account joined),
  // not yet registered.
  absl::StatusOr<std::shared_ptr<Session>> NewSession(const v1::Hello& hello,
                                                      const User& user,
                                                      absl::string_view peer);
  absl::StatusOr<std::shared_ptr<Session>> Resume(
      const v1::Hello& hello, const User& user,
      std::shared_ptr<FrameSink> sink);
  // Releases detached sessions whose grace period is over.
  void ReaperLoop();

  const SessionLimits limits_;
  DeviceRegistry* const devices_;
  Authenticator* const auth_;
  DaemonCounters counters_;
  UserAccounts accounts_;  // the allocator account each user's sessions share
  std::atomic<uint64_t> next_number_{1};
  std::atomic<int> bulk_port_{0};
  std::string cma_socket_ ABSL_GUARDED_BY(mu_);
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> sessions_
      ABSL_GUARDED_BY(mu_);
  // Per user: slots taken by sessions being made, not yet in sessions_.
  absl::flat_hash_map<std::string, int> reserved_ ABSL_GUARDED_BY(mu_);
  // Detached sessions and when their grace period ends.
  absl::flat_hash_map<std::string, absl::Time> deadlines_ ABSL_GUARDED_BY(mu_);
  uint64_t deadlines_changed_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread reaper_;  // last: starts after the members it uses
};

}  // namespace tensord

#endif  // TENSORD_SERVER_SESSION_MANAGER_H_

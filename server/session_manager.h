// The daemon's sessions: opening (version and token checks, the Welcome),
// listing and killing. Transport-agnostic (no grpcpp). Thread-safe.
#ifndef TENSORD_SERVER_SESSION_MANAGER_H_
#define TENSORD_SERVER_SESSION_MANAGER_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/admin.pb.h"
#include "server/auth.h"
#include "server/session.h"

namespace tensord {

inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr char kServerVersion[] = "0.1.0";
inline constexpr size_t kChunkBytes = 1 << 20;
inline constexpr size_t kMaxFrameBytes = 8 << 20;

class SessionManager {
 public:
  SessionManager(DeviceRegistry* devices, Authenticator* auth);

  // Checks `hello` (protocol version, token: from Hello or `metadata_token`)
  // and starts a session whose replies go to `sink`. The Welcome is the
  // first frame sent to the sink. FAILED_PRECONDITION names both versions;
  // UNAUTHENTICATED for tokens.
  absl::StatusOr<std::shared_ptr<Session>> Open(
      const v1::Hello& hello, absl::string_view metadata_token,
      absl::string_view peer, std::shared_ptr<FrameSink> sink);
  // Forgets a session whose stream is over.
  void Remove(const std::string& id);
  // Ends a session (tensorctl kill); NOT_FOUND if there is none.
  absl::Status Kill(const std::string& id);
  // Ends every session and waits for them (daemon shutdown).
  void Shutdown();

  std::vector<v1::SessionInfo> List() const;
  v1::ListDevicesResponse Devices() const;
  size_t size() const;
  // The id of the session the allocators know as `number`.
  std::string SessionIdOf(uint64_t number) const;
  Authenticator* auth() const { return auth_; }
  DeviceRegistry* devices() const { return devices_; }

 private:
  v1::Welcome MakeWelcome(const Session& session) const;

  DeviceRegistry* const devices_;
  Authenticator* const auth_;
  std::atomic<uint64_t> next_number_{1};
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> sessions_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace tensord

#endif  // TENSORD_SERVER_SESSION_MANAGER_H_

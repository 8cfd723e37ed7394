#include "server/user_usage.h"

#include <map>
#include <optional>
#include <string>

namespace tensord {

std::vector<v1::UserInfo> SumUsers(const std::vector<v1::SessionInfo>& sessions,
                                   const DaemonCounters& counters,
                                   const Authenticator& auth) {
  std::map<std::string, v1::UserInfo> users;
  for (const auto& [name, c] : counters.Users()) {
    v1::UserInfo& u = users[name];
    u.set_ops(c->ops.load(std::memory_order_relaxed));
    u.set_commands(c->commands.load(std::memory_order_relaxed));
    u.set_auth_failures(c->auth_failures.load(std::memory_order_relaxed));
    u.set_fallbacks(c->fallbacks.load(std::memory_order_relaxed));
  }
  for (const v1::SessionInfo& s : sessions) {
    v1::UserInfo& u = users[s.user()];
    u.set_sessions(u.sessions() + 1);
    auto& memory = *u.mutable_memory_bytes();
    for (const auto& [device, bytes] : s.memory_bytes()) {
      memory[device] += bytes;
    }
    // Host memory its quota on the cpu allocator counts (ExternalCharge).
    const uint64_t host = s.shared_buffer_bytes() + s.shm_region_bytes();
    if (host != 0) memory["cpu"] += host;
  }
  std::vector<v1::UserInfo> out;
  for (auto& [name, u] : users) {
    u.set_user(name);
    if (std::optional<User> user = auth.FindUser(name)) {
      u.set_in_tokens_file(true);
      u.set_quota_bytes(user->quota_bytes);
      u.set_admin(user->admin);
    }
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace tensord

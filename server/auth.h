// Who may connect: the tokens file and token checks.
//
// Tokens file format, one user per line ('#' starts a comment):
//   USER TOKEN [quota=BYTES[KiB|MiB|GiB]] [priority=N] [admin]
// Tokens are compared in constant time. Thread-safe; Reload() swaps the
// table atomically (SIGHUP).
#ifndef TENSORD_SERVER_AUTH_H_
#define TENSORD_SERVER_AUTH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/core/mutex.h"

namespace tensord {

struct User {
  std::string name;
  int64_t quota_bytes = 0;  // 0: no quota
  int priority = 0;
  bool admin = false;
};

class Authenticator {
 public:
  // No tokens: every caller is the anonymous user, an admin (--insecure).
  static std::unique_ptr<Authenticator> Insecure();
  // Loads `path`; INVALID_ARGUMENT naming the line for syntax errors.
  static absl::StatusOr<std::unique_ptr<Authenticator>> FromFile(
      std::string path);
  // Parses file contents (exposed for tests).
  static absl::StatusOr<std::vector<std::pair<std::string, User>>> Parse(
      absl::string_view contents);

  // UNAUTHENTICATED unless `token` belongs to a user.
  absl::StatusOr<User> Authenticate(absl::string_view token) const;
  // PERMISSION_DENIED unless `token` belongs to an admin.
  absl::StatusOr<User> AuthenticateAdmin(absl::string_view token) const;
  // Rereads the file; on an error the old table stays. Sessions already
  // open are the SessionManager's business (Note [Tokens reload]).
  absl::Status Reload();
  // The user called `name` in the current table, if any.
  std::optional<User> FindUser(absl::string_view name) const;
  bool insecure() const { return path_.empty(); }

 private:
  explicit Authenticator(std::string path) : path_(std::move(path)) {}
  const std::string path_;
  mutable Mutex mu_;
  std::vector<std::pair<std::string, User>> tokens_ ABSL_GUARDED_BY(mu_);
};

// Constant-time equality (no early exit on the first differing byte).
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

}  // namespace tensord

#endif  // TENSORD_SERVER_AUTH_H_

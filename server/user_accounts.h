// The allocator accounts of the daemon's users: one per user that opened a
// session, shared by every session of that user, so that the user's quota
// covers their bytes together, quota or not (a quota that a reload sets
// later counts all of them: Note [Tokens reload], server/tokens_reload.h).
// Account ids live above
// every session number (the allocators' key space). Thread-safe; no lock is
// held while the allocators are called.
#ifndef TENSORD_SERVER_USER_ACCOUNTS_H_
#define TENSORD_SERVER_USER_ACCOUNTS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "runtime/core/mutex.h"
#include "runtime/device.h"
#include "server/auth.h"

namespace tensord {

class UserAccounts {
 public:
  // Joins session `number` to `user`'s account (made on first use) on every
  // device of `devices`, and sets the user's quota there if it has one.
  void Join(const User& user, uint64_t number, const DeviceRegistry& devices);
  // Every user that opened a session, with its account.
  std::vector<std::pair<std::string, uint64_t>> List() const;

 private:
  // `user`'s account id, made on first use.
  uint64_t AccountOf(const std::string& user);

  mutable Mutex mu_;
  absl::flat_hash_map<std::string, uint64_t> accounts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tensord

#endif  // TENSORD_SERVER_USER_ACCOUNTS_H_

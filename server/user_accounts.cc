#include "server/user_accounts.h"

#include "absl/strings/str_cat.h"

namespace tensord {

void UserAccounts::Join(const User& user, uint64_t number,
                        const DeviceRegistry& devices) {
  const uint64_t account = AccountOf(user.name);
  for (const auto& d : devices.devices()) {
    d->allocator()->JoinAccount(number, account,
                                absl::StrCat("user '", user.name, "'"));
    if (user.quota_bytes > 0) {
      d->allocator()->SetSessionQuota(account, user.quota_bytes);
    }
  }
}

std::vector<std::pair<std::string, uint64_t>> UserAccounts::List() const {
  MutexLock lock(&mu_);
  return {accounts_.begin(), accounts_.end()};
}

uint64_t UserAccounts::AccountOf(const std::string& user) {
  MutexLock lock(&mu_);
  auto [it, inserted] = accounts_.try_emplace(user, 0);
  // Account ids live above every session number (the allocators' key space).
  if (inserted) it->second = (uint64_t{1} << 63) | accounts_.size();
  return it->second;
}

}  // namespace tensord

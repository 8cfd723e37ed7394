#include "server/tokens_reload.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace tensord {

void ApplyTokens(SessionManager* sessions) {
  const Authenticator& auth = *sessions->auth();
  DeviceRegistry* devices = sessions->devices();
  for (const auto& [name, account] : sessions->Accounts()) {
    if (std::optional<User> user = auth.FindUser(name)) {
      const int64_t bytes = user->quota_bytes > 0 ? user->quota_bytes : -1;
      for (const auto& d : devices->devices()) {
        d->allocator()->SetSessionQuota(account, bytes);
      }
    }
  }
  SessionManager::Evicted gone = sessions->EvictUsersIf(
      [&auth](const std::string& user) { return !auth.FindUser(user); });
  for (const auto* list : {&gone.open, &gone.detached}) {
    for (const auto& s : *list) {
      const std::string why = absl::StrCat(
          "user '", s->params().user, "' was removed from the tokens file");
      spdlog::warn("session {} ended: {}", s->params().id, why);
      s->Kill(absl::UnauthenticatedError(why));
    }
  }
  for (const auto& s : gone.detached) {
    for (const auto& d : devices->devices()) {
      d->allocator()->EndSession(s->params().number);
    }
  }
}

}  // namespace tensord

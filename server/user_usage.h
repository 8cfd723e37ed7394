// Per-user sums for operators (tensorctl users, Admin.ListUsers; the
// tensord_user_* metrics): sessions, memory against the quota, the user's
// counters (Note [Daemon counters]). Pure: reads what it is given.
#ifndef TENSORD_SERVER_USER_USAGE_H_
#define TENSORD_SERVER_USER_USAGE_H_

#include <vector>

#include "proto/admin.pb.h"
#include "server/auth.h"
#include "server/daemon_counters.h"

namespace tensord {

// One entry per user with counters or sessions, by name. Users come from
// the daemon (the tokens file's names as sessions and counters hold them),
// never from a client's text.
std::vector<v1::UserInfo> SumUsers(const std::vector<v1::SessionInfo>& sessions,
                                   const DaemonCounters& counters,
                                   const Authenticator& auth);

}  // namespace tensord

#endif  // TENSORD_SERVER_USER_USAGE_H_

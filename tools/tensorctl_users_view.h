// `tensorctl users`: one row per user from two ListUsers samples (the
// daemon's counters count from its start; the rate is their difference over
// the daemon's own clock between the samples). Pure functions; no I/O.
#ifndef TENSORD_TOOLS_TENSORCTL_USERS_VIEW_H_
#define TENSORD_TOOLS_TENSORCTL_USERS_VIEW_H_

#include <string>
#include <vector>

#include "proto/admin.pb.h"

namespace tensord {
namespace tensorctl {

struct UserRow {
  v1::UserInfo user;          // as of the second sample
  double ops_per_second = 0;  // over the window between the samples
  double quota_used = 0;      // the fullest device's bytes / quota; 0: none
};

// Rows of `after`, by name, with rates against `before` (a user new in
// `after` counts from zero).
std::vector<UserRow> UserRows(const v1::ListUsersResponse& before,
                              const v1::ListUsersResponse& after);
// The seconds between the samples on the daemon's clock (0 if none passed).
double WindowSeconds(const v1::ListUsersResponse& before,
                     const v1::ListUsersResponse& after);

std::string FormatUsers(const std::vector<UserRow>& rows,
                        const v1::ListUsersResponse& after);
// docs/tensorctl.md documents every field.
std::string UsersJson(const std::vector<UserRow>& rows,
                      const v1::ListUsersResponse& before,
                      const v1::ListUsersResponse& after);

}  // namespace tensorctl
}  // namespace tensord

#endif  // TENSORD_TOOLS_TENSORCTL_USERS_VIEW_H_

// `tensorctl users`: per user, sessions, memory against the quota, ops/s
// (over --interval, default 1 s: two ListUsers samples) and auth failures.
// The wait between the samples is the measuring window, not a
// synchronisation.
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/tensorctl_commands.h"
#include "tools/tensorctl_users_view.h"

namespace tensord {
namespace tensorctl {
namespace {

absl::Status Sample(Ctl& ctl, v1::ListUsersResponse* out) {
  grpc::Status status =
      ctl.admin->ListUsers(ctl.NewContext().get(), v1::ListUsersRequest(), out);
  return status.ok() ? absl::OkStatus() : ctl.RpcError("ListUsers", status);
}

}  // namespace

absl::Status RunUsers(Ctl& ctl, Args) {
  if (ctl.interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--interval must be positive, e.g. --interval=1s, not ",
                     absl::FormatDuration(ctl.interval)));
  }
  v1::ListUsersResponse before, after;
  if (absl::Status s = Sample(ctl, &before); !s.ok()) return s;
  absl::SleepFor(ctl.interval);
  if (absl::Status s = Sample(ctl, &after); !s.ok()) return s;
  const std::vector<UserRow> rows = UserRows(before, after);
  *ctl.out << (ctl.json ? UsersJson(rows, before, after) + "\n"
                        : FormatUsers(rows, after));
  return absl::OkStatus();
}

}  // namespace tensorctl
}  // namespace tensord

#include "tools/tensorctl_users_view.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/tensorctl_format.h"

namespace tensord {
namespace tensorctl {
namespace {

std::map<std::string, uint64_t> SortedMemory(const v1::UserInfo& u) {
  return {u.memory_bytes().begin(), u.memory_bytes().end()};
}

}  // namespace

double WindowSeconds(const v1::ListUsersResponse& before,
                     const v1::ListUsersResponse& after) {
  return std::max(0.0, after.uptime_seconds() - before.uptime_seconds());
}

std::vector<UserRow> UserRows(const v1::ListUsersResponse& before,
                              const v1::ListUsersResponse& after) {
  std::map<std::string, uint64_t> ops_before;
  for (const v1::UserInfo& u : before.users()) ops_before[u.user()] = u.ops();
  const double seconds = WindowSeconds(before, after);
  std::vector<UserRow> rows;
  for (const v1::UserInfo& u : after.users()) {
    UserRow& row = rows.emplace_back();
    row.user = u;
    const uint64_t base = ops_before[u.user()];
    if (seconds > 0 && u.ops() >= base) {
      row.ops_per_second = (u.ops() - base) / seconds;
    }
    if (u.quota_bytes() > 0) {
      for (const auto& [device, bytes] : u.memory_bytes()) {
        row.quota_used = std::max(row.quota_used,
                                  static_cast<double>(bytes) / u.quota_bytes());
      }
    }
  }
  std::sort(rows.begin(), rows.end(), [](const UserRow& a, const UserRow& b) {
    return a.user.user() < b.user.user();
  });
  return rows;
}

std::string FormatUsers(const std::vector<UserRow>& rows,
                        const v1::ListUsersResponse& after) {
  if (rows.empty()) return "no users\n";
  Table table({"USER", ">SESSIONS", "MEMORY", ">QUOTA", ">USED", ">OPS/S",
               ">OPS", ">FALLBACKS", ">AUTH FAILURES", "ADMIN"});
  for (const UserRow& row : rows) {
    const v1::UserInfo& u = row.user;
    std::vector<std::string> memory;
    for (const auto& [device, bytes] : SortedMemory(u)) {
      memory.push_back(absl::StrCat(device, "=", HumanBytes(bytes)));
    }
    table.AddRow({u.in_tokens_file() ? u.user() : u.user() + " (gone)",
                  absl::StrCat(u.sessions()),
                  memory.empty() ? "-" : absl::StrJoin(memory, ","),
                  u.quota_bytes() > 0 ? HumanBytes(u.quota_bytes()) : "-",
                  u.quota_bytes() > 0 ? Percent(row.quota_used) : "-",
                  absl::StrFormat("%.1f", row.ops_per_second),
                  absl::StrCat(u.ops()), absl::StrCat(u.fallbacks()),
                  absl::StrCat(u.auth_failures()), u.admin() ? "yes" : "no"});
  }
  std::string text = table.ToString();
  if (after.unknown_token_failures() != 0) {
    absl::StrAppend(&text,
                    "unknown tokens refused: ", after.unknown_token_failures(),
                    "\n");
  }
  return text;
}

std::string UsersJson(const std::vector<UserRow>& rows,
                      const v1::ListUsersResponse& before,
                      const v1::ListUsersResponse& after) {
  std::vector<std::string> items;
  for (const UserRow& row : rows) {
    const v1::UserInfo& u = row.user;
    JsonObject memory;
    for (const auto& [device, bytes] : SortedMemory(u)) {
      memory.Add(device, bytes);
    }
    items.push_back(JsonObject()
                        .Add("user", u.user())
                        .Add("sessions", uint64_t{u.sessions()})
                        .AddRaw("memory_bytes", memory.ToString())
                        .Add("quota_bytes", u.quota_bytes())
                        .Add("quota_used", row.quota_used)
                        .Add("ops_per_second", row.ops_per_second)
                        .Add("ops_total", u.ops())
                        .Add("commands_total", u.commands())
                        .Add("fallbacks_total", u.fallbacks())
                        .Add("auth_failures", u.auth_failures())
                        .Add("admin", u.admin())
                        .Add("in_tokens_file", u.in_tokens_file())
                        .ToString());
  }
  return JsonObject()
      .AddRaw("users", JsonArray(items))
      .Add("unknown_token_failures", after.unknown_token_failures())
      .Add("window_seconds", WindowSeconds(before, after))
      .ToString();
}

}  // namespace tensorctl
}  // namespace tensord

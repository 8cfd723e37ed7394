#include "tools/tensorctl_users_view.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace tensord {
namespace tensorctl {
namespace {

v1::UserInfo User(const std::string& name, uint64_t ops) {
  v1::UserInfo u;
  u.set_user(name);
  u.set_ops(ops);
  u.set_in_tokens_file(true);
  return u;
}

TEST(UsersViewTest, RatesOverTheDaemonsClockAndQuotaOfTheFullestDevice) {
  v1::ListUsersResponse before, after;
  before.set_uptime_seconds(10);
  *before.add_users() = User("bob", 100);
  after.set_uptime_seconds(12);
  *after.add_users() = User("bob", 300);
  v1::UserInfo alice = User("alice", 50);  // new: counts from zero
  alice.set_quota_bytes(1000);
  (*alice.mutable_memory_bytes())["cpu"] = 250;
  (*alice.mutable_memory_bytes())["cuda:0"] = 500;
  alice.set_sessions(2);
  *after.add_users() = alice;
  const std::vector<UserRow> rows = UserRows(before, after);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].user.user(), "alice");
  EXPECT_DOUBLE_EQ(rows[0].ops_per_second, 25);
  EXPECT_DOUBLE_EQ(rows[0].quota_used, 0.5);
  EXPECT_DOUBLE_EQ(rows[1].ops_per_second, 100);
  EXPECT_DOUBLE_EQ(rows[1].quota_used, 0);
  const std::string json = UsersJson(rows, before, after);
  EXPECT_TRUE(absl::StrContains(
      json,
      "{\"user\":\"alice\",\"sessions\":2,\"memory_bytes\":{\"cpu\":250,"
      "\"cuda:0\":500},\"quota_bytes\":1000,\"quota_used\":0.5,"
      "\"ops_per_second\":25,"))
      << json;
  EXPECT_TRUE(absl::StrContains(json, "\"window_seconds\":2")) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"fallbacks_total\":0,")) << json;
  const std::string table = FormatUsers(rows, after);
  EXPECT_TRUE(absl::StrContains(table, "50.0%")) << table;
  EXPECT_TRUE(absl::StrContains(table, "100.0")) << table;
}

// Note [Client fallbacks]: the ops a user's clients ran on their own CPU.
TEST(UsersViewTest, FallbacksAreCountedPerUser) {
  v1::ListUsersResponse sample;
  v1::UserInfo dave = User("dave", 9);
  dave.set_fallbacks(12);
  *sample.add_users() = dave;
  const std::vector<UserRow> rows = UserRows(sample, sample);
  const std::string json = UsersJson(rows, sample, sample);
  EXPECT_TRUE(
      absl::StrContains(json, "\"commands_total\":0,\"fallbacks_total\":12,"))
      << json;
  const std::string table = FormatUsers(rows, sample);
  EXPECT_TRUE(absl::StrContains(table, "FALLBACKS")) << table;
  EXPECT_TRUE(absl::StrContains(table, "  12  ")) << table;
}

TEST(UsersViewTest, NoWindowNoRateAndUnknownTokensShown) {
  v1::ListUsersResponse sample;
  sample.set_uptime_seconds(5);
  sample.set_unknown_token_failures(3);
  *sample.add_users() = User("carol", 7);
  const std::vector<UserRow> rows = UserRows(sample, sample);
  EXPECT_DOUBLE_EQ(rows[0].ops_per_second, 0);
  EXPECT_TRUE(absl::StrContains(FormatUsers(rows, sample),
                                "unknown tokens refused: 3"));
  EXPECT_EQ(FormatUsers({}, v1::ListUsersResponse()), "no users\n");
}

}  // namespace
}  // namespace tensorctl
}  // namespace tensord

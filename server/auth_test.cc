#include "server/auth.h"

#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(AuthTest, ParsesUsersQuotasAndAdmins) {
  auto parsed = Authenticator::Parse(
      "# comment\nalice tok-a quota=2GiB\n\nops tok-o admin priority=3\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].second.name, "alice");
  EXPECT_EQ((*parsed)[0].second.quota_bytes, 2LL << 30);
  EXPECT_TRUE((*parsed)[1].second.admin);
  EXPECT_EQ((*parsed)[1].second.priority, 3);
  auto bad = Authenticator::Parse("alice\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 1"), std::string::npos);
  EXPECT_FALSE(Authenticator::Parse("bob t quota=lots\n").ok());
}

TEST(AuthTest, OverflowingNumbersAreErrorsNamingTheLine) {
  for (const char* quota :
       {"8589934592GiB", "9223372036854775807KiB", "99999999999999999999"}) {
    auto parsed = Authenticator::Parse(
        std::string("alice tok-a\nbob tok-b quota=") + quota + "\n");
    ASSERT_FALSE(parsed.ok()) << quota;
    EXPECT_NE(parsed.status().message().find("line 2"), std::string::npos)
        << parsed.status();
  }
  EXPECT_FALSE(Authenticator::Parse("bob t priority=99999999999\n").ok());
  auto max = Authenticator::Parse("bob t quota=8589934591GiB\n");
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_EQ((*max)[0].second.quota_bytes, int64_t{8589934591} << 30);
}

TEST(AuthTest, TokensFromFileAndReload) {
  const std::string path = ::testing::TempDir() + "/tokens";
  { std::ofstream(path) << "alice tok-a\nops tok-o admin\n"; }
  auto auth = Authenticator::FromFile(path);
  ASSERT_TRUE(auth.ok());
  EXPECT_EQ((*auth)->Authenticate("tok-a")->name, "alice");
  EXPECT_EQ((*auth)->Authenticate("nope").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ((*auth)->Authenticate("").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ((*auth)->AuthenticateAdmin("tok-a").status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE((*auth)->AuthenticateAdmin("tok-o").ok());
  { std::ofstream(path) << "ops tok-o admin\n"; }  // alice revoked
  ASSERT_TRUE((*auth)->Reload().ok());
  EXPECT_FALSE((*auth)->Authenticate("tok-a").ok());
  EXPECT_FALSE(Authenticator::FromFile(path + ".missing").ok());
}

TEST(AuthTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
}

}  // namespace
}  // namespace tensord

#include "server/auth_failures.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(AuthFailuresTest, PeerHostDropsThePort) {
  EXPECT_EQ(AuthFailures::PeerHost("ipv4:10.0.0.1:5555"), "ipv4:10.0.0.1");
  EXPECT_EQ(AuthFailures::PeerHost("ipv6:[::1]:5"), "ipv6:[::1]");
  EXPECT_EQ(AuthFailures::PeerHost("unix:/run/t.sock"), "unix:/run/t.sock");
}

TEST(AuthFailuresTest, DelayGrowsPerHostAndIsBounded) {
  AuthFailures failures;
  const absl::Time t = absl::FromUnixSeconds(1000);
  EXPECT_EQ(failures.Record("ipv4:1.2.3.4:1", t).delay,
            absl::Milliseconds(100));
  EXPECT_EQ(failures.Record("ipv4:1.2.3.4:2", t).delay,
            absl::Milliseconds(200));
  EXPECT_EQ(failures.Record("ipv4:1.2.3.4:3", t).delay,
            absl::Milliseconds(400));
  // Another host starts afresh.
  EXPECT_EQ(failures.Record("ipv4:5.6.7.8:1", t).delay,
            absl::Milliseconds(100));
  absl::Duration last;
  for (int i = 0; i < 100; ++i)
    last = failures.Record("ipv4:1.2.3.4:9", t).delay;
  EXPECT_EQ(last, absl::Seconds(5));
  // Forgotten after a quiet while.
  EXPECT_EQ(failures.Record("ipv4:1.2.3.4:9", t + absl::Minutes(11)).delay,
            absl::Milliseconds(100));
}

TEST(AuthFailuresTest, TableIsBounded) {
  AuthFailures::Options options;
  options.max_peers = 64;
  AuthFailures failures(options);
  const absl::Time t = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 10000; ++i) {
    failures.Record(absl::StrCat("ipv4:10.0.", i / 256, ".", i % 256, ":1"),
                    t + absl::Milliseconds(i));
  }
  EXPECT_LE(failures.peers(), 64u);
}

TEST(AuthFailuresTest, LogLinesAreRateLimited) {
  AuthFailures failures;
  const absl::Time t = absl::FromUnixSeconds(1000);
  int logged = 0;
  for (int i = 0; i < 1000; ++i)
    logged += failures.Record("ipv4:1.1.1.1:1", t).log;
  EXPECT_EQ(logged, 10);
  const auto next = failures.Record("ipv4:1.1.1.1:1", t + absl::Minutes(1));
  EXPECT_TRUE(next.log);
  EXPECT_EQ(next.suppressed, 990);
}

}  // namespace
}  // namespace tensord

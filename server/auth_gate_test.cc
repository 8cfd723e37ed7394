#include "server/auth_gate.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace tensord {
namespace {

StreamGuards Guards(int total, int per_host) {
  StreamGuards guards;
  guards.max_unauthenticated = total;
  guards.max_unauthenticated_per_host = per_host;
  return guards;
}

TEST(AuthGateTest, OneHostCannotTakeEverySlot) {
  AuthGate gate(Guards(8, 3));
  for (int port = 1; port <= 3; ++port) {
    EXPECT_TRUE(gate.Admit(absl::StrCat("ipv4:10.0.0.1:", port)).ok());
  }
  const absl::Status refused = gate.Admit("ipv4:10.0.0.1:4");
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("--max_unauthenticated_streams_per_host"),
            std::string::npos)
      << refused;
  // Other hosts still get in, up to the total.
  for (int host = 2; host <= 6; ++host) {
    EXPECT_TRUE(gate.Admit(absl::StrCat("ipv4:10.0.0.", host, ":1")).ok());
  }
  EXPECT_EQ(gate.waiting(), 8u);
  const absl::Status full = gate.Admit("ipv6:[::1]:7");
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("its --max_unauthenticated_streams)"),
            std::string::npos)
      << full;
  // A stream that leaves frees its host's slot and the total's.
  gate.Leave("ipv4:10.0.0.1:2");
  EXPECT_EQ(gate.waiting(), 7u);
  EXPECT_TRUE(gate.Admit("ipv4:10.0.0.1:9").ok());
}

TEST(AuthGateTest, ARefusedStreamCountsNothing) {
  AuthGate gate(Guards(4, 1));
  EXPECT_TRUE(gate.Admit("ipv4:1.1.1.1:1").ok());
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(gate.Admit("ipv4:1.1.1.1:2").ok());
  gate.Leave("ipv4:1.1.1.1:1");
  EXPECT_EQ(gate.waiting(), 0u);
  EXPECT_TRUE(gate.Admit("ipv4:1.1.1.1:3").ok());
}

TEST(AuthGateTest, RefusalsComeLaterForARepeatingHost) {
  AuthFailures::Options failures;
  failures.base_delay = absl::Milliseconds(20);
  AuthGate gate(StreamGuards(), failures);
  absl::Duration previous;
  for (int i = 0; i < 3; ++i) {
    absl::Notification refused;
    const absl::Time start = absl::Now();
    gate.RefuseLater("Admin authentication", "ipv4:9.9.9.9:1",
                     absl::UnauthenticatedError("no such token"),
                     [&refused] { refused.Notify(); });
    refused.WaitForNotification();
    const absl::Duration took = absl::Now() - start;
    EXPECT_GE(took, absl::Milliseconds(20) * (1 << i)) << i;
    previous = took;
  }
}

}  // namespace
}  // namespace tensord

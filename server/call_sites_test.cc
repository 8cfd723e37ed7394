#include "server/call_sites.h"

#include <string>

#include "gtest/gtest.h"
#include "server/wire_limits.h"

namespace tensord {
namespace {

TEST(CallSitesTest, BoundIdResolvesToTheSameText) {
  CallSites sites;
  auto bound = sites.Resolve(7, "train.py:12");
  ASSERT_TRUE(bound.ok()) << bound.status();
  auto again = sites.Resolve(7, "");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(**again, "train.py:12");
  EXPECT_EQ(again->get(), bound->get());  // kept once, shared
}

TEST(CallSitesTest, UnboundIdIsAnError) {
  CallSites sites;
  auto site = sites.Resolve(3, "");
  EXPECT_EQ(site.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(site.status().message().find("site id 3 was never bound"),
            std::string::npos)
      << site.status();
}

TEST(CallSitesTest, RebindingReplacesTheText) {
  CallSites sites;
  ASSERT_TRUE(sites.Resolve(1, "a.py:1").ok());
  ASSERT_TRUE(sites.Resolve(1, "b.py:2").ok());
  EXPECT_EQ(**sites.Resolve(1, ""), "b.py:2");
}

TEST(CallSitesTest, BoundBytesAreCapped) {
  CallSites sites;
  const std::string half(kMaxBoundSiteBytes / 2, 'x');
  ASSERT_TRUE(sites.Resolve(1, half).ok());
  ASSERT_TRUE(sites.Resolve(2, half).ok());
  auto over = sites.Resolve(3, "y");
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(over.status().message().find("bytes of call-site text"),
            std::string::npos)
      << over.status();
  // Replacing a bound text counts only the difference.
  EXPECT_TRUE(sites.Resolve(2, "short").ok());
  EXPECT_TRUE(sites.Resolve(3, "y").ok());
}

TEST(CallSitesTest, InlineTextIsKeptOnceWhileItRepeats) {
  CallSites sites;
  CallSites::SiteText first = sites.Inline("loop.py:5");
  EXPECT_EQ(sites.Inline("loop.py:5").get(), first.get());
  EXPECT_EQ(*sites.Inline("loop.py:6"), "loop.py:6");
  EXPECT_EQ(*sites.Inline(""), "");
  auto via_id_zero = sites.Resolve(0, "loop.py:6");
  ASSERT_TRUE(via_id_zero.ok());
  EXPECT_EQ(**via_id_zero, "loop.py:6");
}

}  // namespace
}  // namespace tensord

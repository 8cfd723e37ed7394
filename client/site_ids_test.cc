#include "client/site_ids.h"

#include "gtest/gtest.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

TEST(SiteIdsTest, FirstCallBindsWithTextLaterOnesSendTheIdAlone) {
  SiteIds ids;
  static const char kFile[] = "train.cc";
  const Site site{kFile, 12};
  SiteIds::Choice first = ids.Choose(site);
  EXPECT_EQ(first.site_id, 1u);
  EXPECT_TRUE(first.bind);
  EXPECT_TRUE(first.text);
  // Not bound until its Call is queued: a failed Call binds nothing.
  EXPECT_TRUE(ids.Choose(site).bind);
  ids.Bound(site, first.site_id);
  SiteIds::Choice later = ids.Choose(site);
  EXPECT_EQ(later.site_id, 1u);
  EXPECT_FALSE(later.bind);
  EXPECT_FALSE(later.text);
  SiteIds::Choice other = ids.Choose(Site{kFile, 13});
  EXPECT_EQ(other.site_id, 2u);
  EXPECT_TRUE(other.bind);
}

TEST(SiteIdsTest, UnknownSiteSendsNothing) {
  SiteIds ids;
  SiteIds::Choice none = ids.Choose(Site{});
  EXPECT_EQ(none.site_id, 0u);
  EXPECT_FALSE(none.bind);
  EXPECT_FALSE(none.text);
}

TEST(SiteIdsTest, PastTheCapLinesSendTheirText) {
  SiteIds ids;
  static const char kFile[] = "loop.cc";
  for (int line = 1; line <= static_cast<int>(SiteIds::kMaxSiteIds); ++line) {
    const Site site{kFile, line};
    ids.Bound(site, ids.Choose(site).site_id);
  }
  SiteIds::Choice past = ids.Choose(Site{kFile, 0});
  EXPECT_EQ(past.site_id, 0u);
  EXPECT_FALSE(past.bind);
  EXPECT_TRUE(past.text);
}

}  // namespace
}  // namespace internal
}  // namespace client
}  // namespace tensord

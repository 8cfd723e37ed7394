// Note [Client fallbacks]: counts per op name, bounded in names and values.
#include "server/fallback_counts.h"

#include <limits>
#include <map>
#include <string>

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(FallbackCountsTest, AddsUpPerNameSorted) {
  FallbackCounts counts;
  counts.Add("aten.cummax.default", 1);
  counts.Add("aten.index.Tensor", 3);
  counts.Add("aten.cummax.default", 2);
  counts.Add("aten.never", 0);  // nothing to count: no entry
  const std::map<std::string, uint64_t> got = counts.Counts();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got.at("aten.cummax.default"), 3u);
  EXPECT_EQ(got.at("aten.index.Tensor"), 3u);
  google::protobuf::RepeatedPtrField<v1::FallbackCount> wire;
  counts.AppendTo(&wire);
  ASSERT_EQ(wire.size(), 2);
  EXPECT_EQ(wire[0].op(), "aten.cummax.default");
  EXPECT_EQ(wire[1].count(), 3u);
  counts.Clear();
  EXPECT_TRUE(counts.Counts().empty());
}

TEST(FallbackCountsTest, NamesPastTheBoundCountAsOtherOps) {
  FallbackCounts counts;
  for (size_t i = 0; i < FallbackCounts::kMaxNames + 10; ++i) {
    counts.Add("op" + std::to_string(i), 1);
  }
  counts.Add("op0", 5);  // a name it holds still counts under its own
  const std::map<std::string, uint64_t> got = counts.Counts();
  EXPECT_EQ(got.size(), FallbackCounts::kMaxNames + 1);
  EXPECT_EQ(got.at(FallbackCounts::kOtherOps), 10u);
  EXPECT_EQ(got.at("op0"), 6u);
  EXPECT_EQ(got.count("op" + std::to_string(FallbackCounts::kMaxNames)), 0u);
}

TEST(FallbackCountsTest, CountsSaturate) {
  FallbackCounts counts;
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  counts.Add("x", max - 1);
  counts.Add("x", 5);
  EXPECT_EQ(counts.Counts().at("x"), max);
}

}  // namespace
}  // namespace tensord

#include "client/shared_ranges.h"

#include "gtest/gtest.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

TEST(SharedRangesTest, FindsTheBufferHoldingARange) {
  char memory[256];
  const uintptr_t begin = reinterpret_cast<uintptr_t>(memory);
  SharedRanges ranges;
  ranges.Add({begin, begin + 128, /*region=*/7, /*data_offset=*/4096});
  ranges.Add({begin + 128, begin + 256, /*region=*/8, /*data_offset=*/0});
  std::optional<SharedRange> found = ranges.Find(memory + 16, 100);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->region, 7u);
  EXPECT_EQ(found->OffsetOf(memory + 16), 4096u + 16);
  EXPECT_FALSE(ranges.Find(memory + 100, 100).has_value());  // straddles
  ranges.Remove(7);
  EXPECT_FALSE(ranges.Find(memory + 16, 100).has_value());
  EXPECT_EQ(ranges.Find(memory + 128, 128)->region, 8u);
}

}  // namespace
}  // namespace internal
}  // namespace client
}  // namespace tensord

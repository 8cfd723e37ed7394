#include "server/secure_random.h"

#include <set>

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(SecureRandomTest, HexHasTheAskedLengthAndDigits) {
  auto hex = SecureRandomHex(16);
  ASSERT_TRUE(hex.ok()) << hex.status();
  EXPECT_EQ(hex->size(), 32u);
  EXPECT_EQ(hex->find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(SecureRandomTest, LargeRequestsAreFilled) {
  // Above getrandom's 256-byte no-short-read guarantee: the loop fills it.
  auto bytes = SecureRandomBytes(1 << 20);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_EQ(bytes->size(), size_t{1} << 20);
  // Every byte value appears in 1 MiB of uniform bytes (a zero-filled or
  // truncated buffer would not).
  std::set<unsigned char> seen(bytes->begin(), bytes->end());
  EXPECT_EQ(seen.size(), 256u);
}

TEST(SecureRandomTest, SecretsDoNotRepeat) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto hex = SecureRandomHex(8);
    ASSERT_TRUE(hex.ok());
    EXPECT_TRUE(seen.insert(*hex).second) << *hex;
  }
}

TEST(SecureRandomTest, ZeroBytesIsEmpty) {
  auto bytes = SecureRandomBytes(0);
  ASSERT_TRUE(bytes.ok());
  EXPECT_TRUE(bytes->empty());
}

}  // namespace
}  // namespace tensord

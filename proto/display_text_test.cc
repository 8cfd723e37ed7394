#include "proto/display_text.h"

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(EscapeClientTextTest, PrintableTextPassesUnchanged) {
  EXPECT_EQ(EscapeClientText("train.py:42 (alice's job)"),
            "train.py:42 (alice's job)");
  EXPECT_EQ(EscapeClientText("caf\xc3\xa9 \xe6\x97\xa5\xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe6\x97\xa5\xf0\x9f\x98\x80");
  EXPECT_EQ(EscapeClientText(""), "");
}

TEST(EscapeClientTextTest, ForgedLogLineAndTerminalEscapes) {
  EXPECT_EQ(EscapeClientText("evil\n[info] forged\x1b[31m"),
            "evil\\n[info] forged\\x1b[31m");
  EXPECT_EQ(EscapeClientText("a\rb\tc\\d"), "a\\rb\\tc\\\\d");
  EXPECT_EQ(EscapeClientText(absl::string_view("\0\x7f", 2)), "\\x00\\x7f");
}

TEST(EscapeClientTextTest, UnicodeControlsAndBadBytes) {
  // C1 CSI, a line separator, a right-to-left override.
  EXPECT_EQ(EscapeClientText("\xc2\x9b"
                             "31m"),
            "\\u{009b}31m");
  EXPECT_EQ(EscapeClientText("a\xe2\x80\xa8"
                             "b"),
            "a\\u{2028}b");
  EXPECT_EQ(EscapeClientText("\xe2\x80\xae"
                             "txt"),
            "\\u{202e}txt");
  // Not UTF-8: a lone continuation byte, a truncated sequence, an overlong
  // slash, a surrogate.
  EXPECT_EQ(EscapeClientText("\x80"), "\\x80");
  EXPECT_EQ(EscapeClientText("\xe6\x97"), "\\xe6\\x97");
  EXPECT_EQ(EscapeClientText("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(EscapeClientText("\xed\xa0\x80"), "\\xed\\xa0\\x80");
}

TEST(EscapeClientTextTest, OutputHasNoControlBytes) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  const std::string escaped = EscapeClientText(all);
  size_t pos = 0;
  while (pos < escaped.size()) {
    const int32_t cp = NextCodePoint(escaped, &pos);
    ASSERT_GE(cp, 0);
    EXPECT_FALSE(IsDisplayControl(cp)) << cp;
  }
}

TEST(NextCodePointTest, DecodesAndAdvances) {
  const std::string s = "a\xc3\xa9\xf0\x9f\x98\x80";
  size_t pos = 0;
  EXPECT_EQ(NextCodePoint(s, &pos), 'a');
  EXPECT_EQ(NextCodePoint(s, &pos), 0xe9);
  EXPECT_EQ(NextCodePoint(s, &pos), 0x1f600);
  EXPECT_EQ(pos, s.size());
}

}  // namespace
}  // namespace tensord

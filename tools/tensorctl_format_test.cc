#include "tools/tensorctl_format.h"

#include "gtest/gtest.h"

namespace tensord {
namespace tensorctl {
namespace {

TEST(TableTest, AlignsColumns) {
  Table table({"NAME", ">SIZE", "NOTE"});
  table.AddRow({"cpu", "1 KiB", "host"});
  table.AddRow({"cuda:0", "80 GiB", ""});
  EXPECT_EQ(table.ToString(),
            "NAME      SIZE  NOTE\n"
            "cpu      1 KiB  host\n"
            "cuda:0  80 GiB\n");
}

TEST(JsonTest, EscapesStrings) {
  EXPECT_EQ(JsonString("plain"), "\"plain\"");
  EXPECT_EQ(JsonString("a\"b\\c\nd\te"), "\"a\\\"b\\\\c\\nd\\te\"");
  EXPECT_EQ(JsonString(std::string("\x01", 1)), "\"\\u0001\"");
  EXPECT_EQ(JsonString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 kept
}

TEST(TableTest, EscapesClientText) {
  Table table({"CLIENT", "NOTE"});
  table.AddRow({"evil\n[info] forged\x1b[31m", "ok"});
  EXPECT_EQ(table.ToString(),
            "CLIENT                       NOTE\n"
            "evil\\n[info] forged\\x1b[31m  ok\n");
}

TEST(JsonTest, EscapesTerminalControls) {
  EXPECT_EQ(JsonString("evil\n[info] forged\x1b[31m"),
            "\"evil\\n[info] forged\\u001b[31m\"");
  EXPECT_EQ(JsonString("\xc2\x9b"
                       "2J"),
            "\"\\u009b2J\"");                            // C1 CSI
  EXPECT_EQ(JsonString("\xe2\x80\xae"), "\"\\u202e\"");  // RTL override
  EXPECT_EQ(JsonString("\xff"), "\"\\ufffd\"");          // not UTF-8
}

TEST(JsonTest, BuildsObjects) {
  std::string json = JsonObject()
                         .Add("name", "cuda:0")
                         .Add("bytes", uint64_t{1} << 40)
                         .Add("neg", int64_t{-3})
                         .Add("ok", true)
                         .Add("ratio", 0.5)
                         .AddRaw("list", JsonArray({"1", "\"x\""}))
                         .ToString();
  EXPECT_EQ(json,
            "{\"name\":\"cuda:0\",\"bytes\":1099511627776,\"neg\":-3,"
            "\"ok\":true,\"ratio\":0.5,\"list\":[1,\"x\"]}");
  EXPECT_EQ(JsonObject().ToString(), "{}");
  EXPECT_EQ(JsonObject().Add("nan", 0.0 / 0.0).ToString(), "{\"nan\":null}");
}

TEST(HumanTest, BytesAndDurations) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(uint64_t{80} << 30), "80 GiB");
  EXPECT_EQ(HumanDuration(42.5), "42s");
  EXPECT_EQ(HumanDuration(125), "2m5s");
  EXPECT_EQ(HumanDuration(3725), "1h2m");
  EXPECT_EQ(HumanDuration(90000), "1d1h");
}

TEST(BlockBarTest, ProportionalShares) {
  EXPECT_EQ(BlockBar({{512, '#'}, {512, '.'}}, 8), "####....");
  EXPECT_EQ(BlockBar({{1, '#'}, {2, '+'}, {1, '.'}}, 8), "##++++..");
  EXPECT_EQ(BlockBar({{3, '#'}}, 5), "#####");
  // Remainders: 10/3 each -> 3,3,3 and the spare to the first largest.
  EXPECT_EQ(BlockBar({{1, 'a'}, {1, 'b'}, {1, 'c'}}, 10), "aaaabbbccc");
  EXPECT_EQ(BlockBar({}, 8), "");
  EXPECT_EQ(BlockBar({{0, '#'}}, 8), "");
  EXPECT_EQ(BlockBar({{1, '#'}}, 0), "");
}

TEST(BlockBarTest, TinyBlocksStayVisible) {
  // 512 B allocated at the start of a 20 MiB segment: one '#', not zero.
  const uint64_t kSegment = 20 << 20;
  EXPECT_EQ(BlockBar({{512, '#'}, {kSegment - 512, '.'}}, 10), "#.........");
  // Two tiny blocks around a big one: the big one gives characters back.
  EXPECT_EQ(BlockBar({{1, '#'}, {1000, '.'}, {1, '+'}}, 4), "#..+");
  EXPECT_EQ(BlockBar({{1, '#'}, {1, '+'}}, 2), "#+");
}

TEST(BlockBarTest, MoreBlocksThanCharacters) {
  // Six blocks in three characters: each character shows its majority.
  EXPECT_EQ(
      BlockBar({{3, '#'}, {1, '.'}, {1, '.'}, {3, '.'}, {3, '+'}, {1, '#'}}, 3),
      "#.+");
  std::vector<BarSpan> many(1000, {1, '#'});
  many[999] = {1, '.'};
  EXPECT_EQ(BlockBar(many, 4), "####");
}

TEST(HumanTest, Percent) {
  EXPECT_EQ(Percent(0.125), "12.5%");
  EXPECT_EQ(Percent(0), "0.0%");
  EXPECT_EQ(Percent(1.0 / 0.0), "-");
}

}  // namespace
}  // namespace tensorctl
}  // namespace tensord

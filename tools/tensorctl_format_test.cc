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

}  // namespace
}  // namespace tensorctl
}  // namespace tensord

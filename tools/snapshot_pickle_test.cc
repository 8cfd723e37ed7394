// JsonToPickle: the opcodes of each JSON value, batching, big integers,
// escapes, and malformed input refused with its offset. That Python reads
// the result back as json.load reads the JSON is checked end to end by
// tests/memory_viz (a daemon's real snapshot, rendered by PyTorch).
#include "tools/snapshot_pickle.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tensord {
namespace tensorctl {
namespace {

using ::testing::HasSubstr;

// The pickle of `json` without its "\x80\x02" header and "." end.
std::string Body(const std::string& json) {
  absl::StatusOr<std::string> p = JsonToPickle(json);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return "";
  EXPECT_EQ(p->substr(0, 2), std::string("\x80\x02", 2));
  EXPECT_EQ(p->back(), '.');
  return p->substr(2, p->size() - 3);
}

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out += static_cast<char>(b);
  return out;
}

TEST(JsonToPickleTest, Scalars) {
  EXPECT_EQ(Body("1"), Bytes({'J', 1, 0, 0, 0}));
  EXPECT_EQ(Body(" -2 "), Bytes({'J', 0xfe, 0xff, 0xff, 0xff}));
  EXPECT_EQ(Body("null"), "N");
  EXPECT_EQ(Body("true"), "\x88");
  EXPECT_EQ(Body("false"), "\x89");
  EXPECT_EQ(Body("\"ab\""), Bytes({'X', 2, 0, 0, 0, 'a', 'b'}));
  EXPECT_EQ(Body("0.5"), Bytes({'G', 0x3f, 0xe0, 0, 0, 0, 0, 0, 0}));
}

TEST(JsonToPickleTest, BigIntegersAsLong1) {
  EXPECT_EQ(Body("2147483648"), Bytes({0x8a, 5, 0, 0, 0, 0x80, 0}));
  EXPECT_EQ(Body("1099511627776"), Bytes({0x8a, 6, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(Body("-1099511627776"), Bytes({0x8a, 6, 0, 0, 0, 0, 0, 0xff}));
  EXPECT_EQ(
      Body("18446744073709551615"),
      Bytes({0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0}));
}

TEST(JsonToPickleTest, ContainersInBatchesOfAThousand) {
  EXPECT_EQ(Body("[]"), "]");
  EXPECT_EQ(Body("{}"), "}");
  EXPECT_EQ(Body("{\"a\": [null]}"),
            Bytes({'}', '(', 'X', 1, 0, 0, 0, 'a', ']', '(', 'N', 'e', 'u'}));
  std::string json = "[";
  for (int i = 0; i < 2500; ++i) json += i == 0 ? "0" : ",0";
  json += "]";
  const std::string body = Body(json);
  int marks = 0, appends = 0;
  for (char c : body) {
    marks += c == '(';
    appends += c == 'e';
  }
  EXPECT_EQ(marks, 3);
  EXPECT_EQ(appends, 3);
  EXPECT_EQ(body.size(), 1 + 3 * 2 + 2500 * 5u);
}

TEST(JsonToPickleTest, StringEscapesBecomeUtf8) {
  EXPECT_EQ(Body("\"\\u00e9\\n\\\"\\\\\\/\""),
            Bytes({'X', 6, 0, 0, 0, 0xc3, 0xa9, '\n', '"', '\\', '/'}));
  EXPECT_EQ(Body("\"\\ud83d\\ude00\""),
            Bytes({'X', 4, 0, 0, 0, 0xf0, 0x9f, 0x98, 0x80}));
}

TEST(JsonToPickleTest, MalformedInputIsRefusedWithItsOffset) {
  for (const char* bad : {"", "[1,", "{1:2}", "\"\\x\"", "[1] 2", "{\"a\" 1}",
                          "\"\\ud800\"", "nul", "\"a\nb\""}) {
    absl::StatusOr<std::string> p = JsonToPickle(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(p.status().message()), HasSubstr("at byte"));
  }
  const std::string deep = std::string(65, '[') + std::string(65, ']');
  EXPECT_THAT(std::string(JsonToPickle(deep).status().message()),
              HasSubstr("deeper than 64"));
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(JsonToPickle(ok).ok());
}

}  // namespace
}  // namespace tensorctl
}  // namespace tensord

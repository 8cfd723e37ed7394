#include "server/wire_limits.h"

#include <string>

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(WireLimitsTest, CallSiteOverTheLimitIsRefusedNamingTheField) {
  v1::Command cmd;
  cmd.mutable_call()->set_site(std::string(kMaxSiteBytes, 'x'));
  EXPECT_TRUE(CheckCommand(cmd).ok());
  cmd.mutable_call()->set_site(std::string(kMaxSiteBytes + 1, 'x'));
  absl::Status s = CheckCommand(cmd);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Call.site"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("1024"), absl::string_view::npos) << s;
}

TEST(WireLimitsTest, AttributesAreBoundedOneByOneAndTogether) {
  v1::Command cmd;
  auto* attrs = cmd.mutable_call()->mutable_attrs();
  (*attrs)["s"].set_s(std::string(kMaxAttrStringBytes + 1, 'a'));
  EXPECT_NE(CheckCommand(cmd).message().find("Call.attrs['s'].s"),
            absl::string_view::npos);
  attrs->clear();
  (*attrs)[std::string(kMaxNameBytes + 1, 'n')].set_i(1);
  EXPECT_EQ(CheckCommand(cmd).code(), absl::StatusCode::kInvalidArgument);
  attrs->clear();
  auto* ints = (*attrs)["dims"].mutable_ints();
  for (size_t i = 0; i < kMaxCallAttrBytes / 8; ++i) ints->add_values(1);
  EXPECT_NE(CheckCommand(cmd).message().find("Call.attrs"),
            absl::string_view::npos);
  attrs->clear();
  for (size_t i = 0; i <= kMaxCallAttrs; ++i) {
    (*attrs)[std::to_string(i)].set_i(1);
  }
  EXPECT_EQ(CheckCommand(cmd).code(), absl::StatusCode::kInvalidArgument);
}

TEST(WireLimitsTest, OtherCommandsTextAndLists) {
  v1::Command get;
  get.mutable_get()->set_site(std::string(kMaxSiteBytes + 1, 'x'));
  EXPECT_NE(CheckCommand(get).message().find("Get.site"),
            absl::string_view::npos);
  v1::Command put;
  for (size_t i = 0; i <= kMaxShapeDims; ++i) put.mutable_put()->add_shape(1);
  EXPECT_NE(CheckCommand(put).message().find("Put.shape"),
            absl::string_view::npos);
  v1::Command options;
  options.mutable_options()->set_default_device(std::string(200, 'd'));
  EXPECT_NE(CheckCommand(options).message().find("default_device"),
            absl::string_view::npos);
  v1::Command backward;
  backward.mutable_backward()->set_site(std::string(kMaxSiteBytes + 1, 'x'));
  EXPECT_FALSE(CheckCommand(backward).ok());
}

TEST(WireLimitsTest, MemoryStatsDeviceAndFallbackNames) {
  v1::Command stats;
  stats.mutable_get_memory_stats()->set_device(std::string(kMaxNameBytes, 'd'));
  EXPECT_TRUE(CheckCommand(stats).ok());
  stats.mutable_get_memory_stats()->set_device(
      std::string(kMaxNameBytes + 1, 'd'));
  EXPECT_NE(CheckCommand(stats).message().find("GetMemoryStats.device"),
            absl::string_view::npos);
  // Note [Client fallbacks]: names of 1 to kMaxNameBytes bytes, and at most
  // kMaxFallbacksPerCommand entries a command.
  v1::Command note;
  v1::FallbackCount* f = note.mutable_note_fallbacks()->add_fallbacks();
  f->set_op(std::string(kMaxNameBytes, 'o'));
  EXPECT_TRUE(CheckCommand(note).ok());
  f->set_op(std::string(kMaxNameBytes + 1, 'o'));
  EXPECT_NE(CheckCommand(note).message().find("NoteFallbacks.fallbacks.op"),
            absl::string_view::npos);
  f->set_op("");
  EXPECT_EQ(CheckCommand(note).code(), absl::StatusCode::kInvalidArgument);
  f->set_op("aten.cummax.default");
  for (size_t i = 1; i <= kMaxFallbacksPerCommand; ++i) {
    note.mutable_note_fallbacks()->add_fallbacks()->set_op("x");
  }
  EXPECT_NE(CheckCommand(note).message().find("NoteFallbacks.fallbacks has"),
            absl::string_view::npos);
}

TEST(WireLimitsTest, HelloClientName) {
  v1::Hello hello;
  hello.set_client_name(std::string(kMaxClientNameBytes, 'c'));
  EXPECT_TRUE(CheckHello(hello).ok());
  hello.set_client_name(std::string(kMaxClientNameBytes + 1, 'c'));
  EXPECT_NE(CheckHello(hello).message().find("Hello.client_name"),
            absl::string_view::npos);
}

TEST(WireLimitsTest, CutTextKeepsUtf8Whole) {
  const std::string text = "ab\xC3\xA9\xC3\xA9\xC3\xA9";  // "abééé"
  std::string s = text;
  CutText(&s, 7);  // room for 4 bytes and "...": "abé"
  EXPECT_EQ(s, "ab\xC3\xA9...");
  s = text;
  CutText(&s, 6);  // 3 bytes would split the first é: "ab"
  EXPECT_EQ(s, "ab...");
  std::string short_text = "abc";
  CutText(&short_text, 3);
  EXPECT_EQ(short_text, "abc");
}

}  // namespace
}  // namespace tensord

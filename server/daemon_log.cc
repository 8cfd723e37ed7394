#include "server/daemon_log.h"

#include <string>

#include "proto/display_text.h"
#include "spdlog/pattern_formatter.h"

namespace tensord {
namespace {

// The %* flag: the message text, escaped.
class EscapedText : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string text = EscapeClientText(
        absl::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedText>();
  }
};

}  // namespace

std::unique_ptr<spdlog::formatter> EscapingLogFormatter() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  // spdlog's default pattern, with %* for %v.
  formatter->add_flag<EscapedText>('*').set_pattern(
      "[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %*");
  return formatter;
}

}  // namespace tensord

#include "server/daemon_log.h"

#include <sstream>

#include "gtest/gtest.h"
#include "spdlog/logger.h"
#include "spdlog/sinks/ostream_sink.h"

namespace tensord {
namespace {

TEST(DaemonLogTest, ClientTextCannotForgeALine) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("test", sink);
  logger.set_formatter(EscapingLogFormatter());
  logger.info("session 1 opened by alice ({}) from {}",
              "evil\n[info] forged\x1b[31m", "ipv4:127.0.0.1:1");
  const std::string text = out.str();
  // One line: the only newline is the one that ends it.
  EXPECT_EQ(text.find('\n'), text.size() - 1) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_NE(text.find("[info] session 1 opened by alice "
                      "(evil\\n[info] forged\\x1b[31m) from ipv4:127.0.0.1:1"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace tensord

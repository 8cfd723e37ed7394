// Attack: a tenant names its session "evil\n[info] forged\x1b[31m" so that
// the daemon's log shows a line it never wrote and the admin's terminal
// runs an escape sequence when tensorctl lists sessions. The name must show
// escaped in the log and in every tensorctl output, and --json must stay
// valid JSON; the daemon and another session go on.
#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"
#include "tests/security/security_env.h"

namespace tensord {
namespace testing {
namespace {

constexpr char kEvilName[] = "evil\n[info] forged\x1b[31m";

// No byte a terminal acts on, except the newlines that end lines.
bool OnlyPrintable(const std::string& text) {
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\n') || c == 0x7f) return false;
  }
  return true;
}

class ClientTextTest : public DaemonSuite {};

TEST_F(ClientTextTest, EvilClientNameIsEscapedEverywhere) {
  RawSession evil(address(), "", kEvilName);
  ASSERT_TRUE(evil.ok());
  RawSession other(address(), "", "bystander");
  ASSERT_TRUE(other.ok());

  // The daemon's log: the Hello is logged on one line, escaped.
  ASSERT_TRUE(daemon_->WaitForLog("(evil\\n[info] forged\\x1b[31m)"))
      << daemon_->log();
  const std::string log = daemon_->log();
  EXPECT_EQ(log.find("\n[info] forged"), std::string::npos) << log;
  EXPECT_TRUE(OnlyPrintable(log)) << log;

  // tensorctl sessions: a header and one line per session.
  const CtlResult table = RunTensorctl(address(), "", "sessions");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_TRUE(OnlyPrintable(table.output)) << table.output;
  EXPECT_NE(table.output.find("evil\\n[info] forged\\x1b[31m"),
            std::string::npos)
      << table.output;
  EXPECT_EQ(std::count(table.output.begin(), table.output.end(), '\n'), 3)
      << table.output;

  // --json: the name as a JSON string with its escapes, nothing raw.
  const CtlResult json = RunTensorctl(address(), "", "--json sessions");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_TRUE(OnlyPrintable(json.output)) << json.output;
  EXPECT_NE(
      json.output.find("\"client_name\":\"evil\\n[info] forged\\u001b[31m\""),
      std::string::npos)
      << json.output;
  EXPECT_EQ(json.output.find('\n'), json.output.size() - 1) << json.output;

  // The other views that show client names.
  for (const char* args : {"memory", "--json memory", "top --iterations=1",
                           "--json top --iterations=1"}) {
    const CtlResult r = RunTensorctl(address(), "", args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.output;
    EXPECT_TRUE(OnlyPrintable(r.output)) << args << ": " << r.output;
  }

  // Both sessions go on.
  evil.PutFloats({2});
  EXPECT_TRUE(evil.Flush().ok);
  other.PutFloats({2});
  EXPECT_TRUE(other.Flush().ok);
  EXPECT_TRUE(daemon_->alive());
}

}  // namespace
}  // namespace testing
}  // namespace tensord

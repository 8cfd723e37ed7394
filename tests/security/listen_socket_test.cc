// Attacks on how the daemon listens: --insecure (every caller an admin)
// on a non-loopback address; a unix: socket seen at the umask's mode before
// its chmod; a symlink planted at the socket's path; a bad
// --unix_socket_mode leaving a socket behind; a tokens-file quota that
// overflows into "no quota"; a tokens file readable by everyone.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"
#include "tests/security/security_env.h"

namespace tensord {
namespace testing {
namespace {

// A fresh directory under /tmp (the test's TempDir is too long for a socket
// address), traversable by everyone so that only the socket's mode guards it.
std::string SocketDir() {
  std::string dir = "/tmp/tensord-listen-XXXXXX";
  EXPECT_NE(mkdtemp(dir.data()), nullptr);
  chmod(dir.c_str(), 0755);
  return dir;
}

// Whether uid `nobody` can connect to the socket at `path` (a forked child
// drops to uid 65534 and tries); nullopt where it cannot become nobody
// (not root, or a sandbox without that uid).
std::optional<bool> NobodyCanConnect(const std::string& path) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    _exit(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0
              ? 0
              : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status)) << status;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) return std::nullopt;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Entries of `dir` (names).
std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> out;
  const std::string cmd = "ls -A " + dir;
  FILE* p = popen(cmd.c_str(), "r");
  char line[512];
  while (p != nullptr && std::fgets(line, sizeof(line), p)) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    out.insert(s);
  }
  if (p != nullptr) pclose(p);
  return out;
}

TEST(ListenSocketTest, InsecureRefusesNonLoopbackAddresses) {
  for (const char* listen : {"0.0.0.0:0", "[::]:0"}) {
    auto daemon =
        DaemonProcess::Start({"--insecure", absl::StrCat("--listen=", listen)});
    ASSERT_FALSE(daemon.ok()) << listen;
    EXPECT_NE(daemon.status().message().find("--insecure"), std::string::npos)
        << daemon.status();
    EXPECT_NE(daemon.status().message().find(listen), std::string::npos)
        << daemon.status();
  }
  // Loopback stays fine.
  auto local = DaemonProcess::Start({"--insecure"});
  ASSERT_TRUE(local.ok()) << local.status();
}

TEST(ListenSocketTest, UnixSocketAppearsOnlyWithItsFinalMode) {
  const std::string dir = SocketDir();
  const std::string path = dir + "/tensord.sock";
  // The most permissive umask: a socket bound at PATH would be 0777.
  const mode_t old_umask = umask(0);
  std::atomic<bool> listening{false};
  std::set<mode_t> seen;
  std::thread watcher([&] {
    // Every mode PATH is ever seen with while the daemon starts.
    struct stat st;
    while (!listening.load()) {
      if (lstat(path.c_str(), &st) == 0) seen.insert(st.st_mode & 07777);
    }
  });
  auto daemon = DaemonProcess::Start(
      {"--insecure", "--listen=unix:" + path, "--unix_socket_mode=0600"});
  listening = true;
  watcher.join();
  umask(old_umask);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  struct stat st;
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  for (mode_t m : seen) EXPECT_EQ(m, 0600u) << std::oct << m;
  // Only the socket is left in the directory (no private directory).
  EXPECT_EQ(Entries(dir), std::set<std::string>{"tensord.sock"});
  // Another uid cannot connect; the owner can, and works.
  const std::optional<bool> nobody = NobodyCanConnect(path);
  // As root (CI, outside Bazel's sandbox: the BUILD's no-sandbox tag) the
  // other uid's attempt must run.
  if (geteuid() == 0) {
    ASSERT_TRUE(nobody.has_value()) << "setuid(65534) failed";
  }
  if (nobody.has_value()) {
    EXPECT_FALSE(*nobody);
  } else {
    std::fprintf(stderr,
                 "note: cannot become uid 65534 here; the socket's "
                 "mode was checked, not another uid's connect\n");
  }
  RawSession session("unix:" + path, "", "owner");
  ASSERT_TRUE(session.ok());
  session.PutFloats({4});
  EXPECT_TRUE(session.Flush().ok);
  session.Close();
  // A clean stop removes the socket.
  const int status = (*daemon)->Terminate();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_NE(lstat(path.c_str(), &st), 0);
}

TEST(ListenSocketTest, SymlinkAtThePathIsRefused) {
  const std::string dir = SocketDir();
  const std::string target = dir + "/precious";
  { std::ofstream(target) << "keep me"; }
  chmod(target.c_str(), 0600);
  const std::string path = dir + "/tensord.sock";
  ASSERT_EQ(symlink(target.c_str(), path.c_str()), 0);
  auto daemon = DaemonProcess::Start(
      {"--insecure", "--listen=unix:" + path, "--unix_socket_mode=0666"});
  ASSERT_FALSE(daemon.ok());
  EXPECT_NE(daemon.status().message().find("symbolic link"), std::string::npos)
      << daemon.status();
  struct stat st;
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);  // not chmod'ed through the link
  EXPECT_EQ(st.st_size, 7);
  EXPECT_EQ(Entries(dir), (std::set<std::string>{"precious", "tensord.sock"}));
  // A regular file is refused as well.
  auto file = DaemonProcess::Start({"--insecure", "--listen=unix:" + target});
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("not a socket"), std::string::npos);
}

TEST(ListenSocketTest, BadModeIsACleanStartupErrorLeavingNothing) {
  const std::string dir = SocketDir();
  const std::string path = dir + "/tensord.sock";
  auto daemon = DaemonProcess::Start(
      {"--insecure", "--listen=unix:" + path, "--unix_socket_mode=abc"});
  ASSERT_FALSE(daemon.ok());
  EXPECT_NE(daemon.status().message().find("--unix_socket_mode=abc"),
            std::string::npos)
      << daemon.status();
  EXPECT_EQ(daemon.status().message().find("terminate called"),
            std::string::npos);
  EXPECT_TRUE(Entries(dir).empty());
}

TEST(ListenSocketTest, StaleSocketIsReplaced) {
  const std::string dir = SocketDir();
  const std::string path = dir + "/tensord.sock";
  {
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    close(fd);  // a daemon that died: the file stays, nobody listens
  }
  auto daemon = DaemonProcess::Start({"--insecure", "--listen=unix:" + path});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  RawSession session("unix:" + path, "", "after a crash");
  EXPECT_TRUE(session.ok());
}

TEST(ListenSocketTest, OverflowingQuotaIsAnErrorNamingTheLine) {
  const std::string tokens = WriteTestFile(
      "overflow_tokens", "ops tok-o admin\nalice tok-a quota=8589934592GiB\n");
  auto daemon = DaemonProcess::Start({"--tokens_file=" + tokens});
  ASSERT_FALSE(daemon.ok());
  EXPECT_NE(daemon.status().message().find("tokens file line 2"),
            std::string::npos)
      << daemon.status();
}

TEST(ListenSocketTest, WorldReadableTokensFileIsWarnedAbout) {
  const std::string tokens =
      WriteTestFile("open_tokens", "ops tok-o admin\n", 0644);
  auto daemon = DaemonProcess::Start({"--tokens_file=" + tokens});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  EXPECT_TRUE((*daemon)->WaitForLog("accessible by group or others"))
      << (*daemon)->log();
  const std::string quiet = WriteTestFile("closed_tokens", "ops tok-o admin\n");
  auto ok = DaemonProcess::Start({"--tokens_file=" + quiet});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->log().find("accessible by group"), std::string::npos);
}

}  // namespace
}  // namespace testing
}  // namespace tensord

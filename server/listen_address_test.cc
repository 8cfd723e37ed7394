#include "server/listen_address.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(CheckInsecureListenTest, LoopbackAndUnixOnly) {
  for (const char* ok : {"127.0.0.1:0", "127.1.2.3:50051", "localhost:1",
                         "[::1]:50051", "ipv4:127.0.0.1:5", "unix:/tmp/s"}) {
    EXPECT_TRUE(CheckInsecureListen(ok).ok()) << ok;
  }
  for (const char* bad :
       {"0.0.0.0:50051", "[::]:1", "10.0.0.1:1", "example.com:1", ":50051",
        "128.0.0.1:1", "127.0.0.1.evil.com:1", "unix-abstract:x"}) {
    const absl::Status s = CheckInsecureListen(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("--insecure"), std::string::npos);
    EXPECT_NE(s.message().find(bad), std::string::npos) << s;
  }
}

TEST(ParseSocketModeTest, OctalOnly) {
  EXPECT_EQ(*ParseSocketMode("0660"), 0660u);
  EXPECT_EQ(*ParseSocketMode("600"), 0600u);
  for (const char* bad : {"abc", "", "0999", "01777", "66x", "-1", "12345"}) {
    EXPECT_FALSE(ParseSocketMode(bad).ok()) << bad;
  }
}

// Under /tmp: the test's TempDir is too long for a socket address.
std::string TempPath(const std::string& name) {
  static const std::string* dir = [] {
    std::string d = "/tmp/listen_address_test-XXXXXX";
    return new std::string(mkdtemp(d.data()));
  }();
  const std::string path = *dir + "/" + name;
  unlink(path.c_str());
  return path;
}

// Binds and listens on `path` (what gRPC does); returns the fd.
int Listen(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0)
      << path;
  EXPECT_EQ(listen(fd, 1), 0);
  return fd;
}

TEST(UnixSocketPlacementTest, PublishesWithTheFinalMode) {
  const std::string path = TempPath("placed.sock");
  auto placement = UnixSocketPlacement::Prepare(path, 0640);
  ASSERT_TRUE(placement.ok()) << placement.status();
  const std::string bound = (*placement)->bind_address().substr(5);
  const int fd = Listen(bound);
  ASSERT_TRUE((*placement)->Publish().ok());
  struct stat st;
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  placement->reset();  // removes the published socket and the private dir
  EXPECT_NE(lstat(path.c_str(), &st), 0);
  EXPECT_NE(lstat(bound.c_str(), &st), 0);
  close(fd);
}

TEST(UnixSocketPlacementTest, RefusesSymlinksFilesAndLiveSockets) {
  const std::string target = TempPath("target");
  { std::ofstream(target) << "precious"; }
  const std::string link = TempPath("link.sock");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_FALSE(UnixSocketPlacement::Prepare(link, 0600).ok());
  EXPECT_FALSE(UnixSocketPlacement::Prepare(target, 0600).ok());
  const std::string live = TempPath("live.sock");
  const int fd = Listen(live);
  EXPECT_FALSE(UnixSocketPlacement::Prepare(live, 0600).ok());
  close(fd);
  // The target is untouched.
  struct stat st;
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 8);
}

TEST(UnixSocketPlacementTest, ReplacesAStaleSocket) {
  const std::string path = TempPath("stale.sock");
  close(Listen(path));  // bound, nobody listens any more
  auto placement = UnixSocketPlacement::Prepare(path, 0600);
  ASSERT_TRUE(placement.ok()) << placement.status();
  const int fd = Listen((*placement)->bind_address().substr(5));
  ASSERT_TRUE((*placement)->Publish().ok());
  struct stat st;
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  close(fd);
}

}  // namespace
}  // namespace tensord

// BulkChannel and BulkListener on real sockets (socket pairs and loopback
// TCP), in process: exact reads and writes, drains, failures that name how
// far they got and break the channel, a Shutdown from another thread that
// ends a blocked read, the stall timeout, and the listener's admission by
// token. Tagged tsan: the listener, the reader and Shutdown run on
// different threads.
#include "server/bulk_socket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/bulk_listener.h"
#include "tests/socket_io.h"

namespace tensord {
namespace {

using ::testing::HasSubstr;

using ::tensord::testing::ConnectLoopback;
using ::tensord::testing::RecvUpTo;
using ::tensord::testing::SendAll;

// A connected pair: the first end for the channel, the second the peer's.
std::pair<int, int> Pair() {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  return {fds[0], fds[1]};
}

std::string Bytes(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i % 251);
  return s;
}

TEST(BulkChannelTest, ReadsDiscardsAndWritesExactly) {
  BulkChannel channel;
  auto [mine, peer] = Pair();
  ASSERT_TRUE(channel.Attach(mine));
  EXPECT_TRUE(channel.attached());
  // More than a socket buffer holds: the peer sends while we read.
  const std::string first = Bytes(3 << 20, 1), dropped = Bytes(5000, 2),
                    second = Bytes(777, 3);
  std::thread sender([&, peer = peer] {
    EXPECT_TRUE(SendAll(peer, first + dropped + second));
  });
  std::string got(first.size(), '\0');
  ASSERT_TRUE(channel.Read(got.data(), got.size(), "put").ok());
  ASSERT_TRUE(channel.Discard(dropped.size(), "put").ok());
  std::string next(second.size(), '\0');
  ASSERT_TRUE(channel.Read(next.data(), next.size(), "put").ok());
  sender.join();
  EXPECT_TRUE(got == first);
  EXPECT_EQ(next, second);
  const std::string out = Bytes(2 << 20, 4);
  std::string echoed;
  std::thread receiver(
      [&, peer = peer] { echoed = RecvUpTo(peer, out.size()); });
  ASSERT_TRUE(channel.Write(out.data(), out.size(), "get").ok());
  receiver.join();
  EXPECT_TRUE(echoed == out);
  close(peer);
}

TEST(BulkChannelTest, APeerThatClosesEarlyBreaksTheChannel) {
  BulkChannel channel;
  auto [mine, peer] = Pair();
  ASSERT_TRUE(channel.Attach(mine));
  ASSERT_TRUE(SendAll(peer, Bytes(100, 5)));
  close(peer);
  std::string got(400, '\0');
  absl::Status status = channel.Read(got.data(), got.size(), "put of handle 9");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            "put of handle 9: the bulk socket closed after 100 of 400 bytes");
  EXPECT_FALSE(channel.attached());
  status = channel.Discard(4, "put of handle 10");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(),
              HasSubstr("put of handle 10: the bulk socket is "
                        "unusable after an earlier failure"));
  // A broken channel takes no new socket: its bytes could not be matched.
  auto [again, other] = Pair();
  EXPECT_FALSE(channel.Attach(again));
  close(other);
}

TEST(BulkChannelTest, WithoutASocketEveryCallSaysSo) {
  BulkChannel channel;
  char byte;
  absl::Status status = channel.Read(&byte, 1, "put of handle 3");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("no bulk socket attached"));
}

TEST(BulkChannelTest, ShutdownEndsABlockedReadFromAnotherThread) {
  BulkChannel channel;
  auto [mine, peer] = Pair();
  ASSERT_TRUE(channel.Attach(mine));
  absl::Status status;
  std::string got(1 << 20, '\0');
  std::thread reader(
      [&] { status = channel.Read(got.data(), got.size(), "put"); });
  ASSERT_TRUE(SendAll(peer, Bytes(10, 6)));  // never the whole 1 MiB
  // Whether the reader is inside recv yet or not, it returns, failed.
  channel.Shutdown();
  reader.join();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("bulk socket"));
  EXPECT_FALSE(channel.Write("x", 1, "get").ok());
  close(peer);
}

TEST(BulkChannelTest, AStalledPeerTimesOut) {
  BulkChannel channel(absl::Milliseconds(50));
  auto [mine, peer] = Pair();
  ASSERT_TRUE(channel.Attach(mine));
  ASSERT_TRUE(SendAll(peer, Bytes(7, 7)));
  std::string got(8, '\0');
  absl::Status status = channel.Read(got.data(), got.size(), "put");
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.message(),
            "put: the bulk socket moved no byte for 50ms after 7 of 8 bytes");
  close(peer);
}

// A listener on a free loopback port that knows one session: `token`'s.
absl::StatusOr<std::unique_ptr<BulkListener>> ListenFor(
    const std::string& token, std::shared_ptr<BulkChannel> channel) {
  return BulkListener::Start(
      "127.0.0.1", 0,
      [token, channel](absl::string_view t) -> std::shared_ptr<BulkChannel> {
        return t == token ? channel : nullptr;
      });
}

TEST(BulkListenerTest, AdmitsOnlyTheTokensItKnowsOnce) {
  const std::string token(kBulkTokenBytes, 'k');
  auto channel = std::make_shared<BulkChannel>();
  auto listener = ListenFor(token, channel);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const int port = (*listener)->port();
  ASSERT_GT(port, 0);
  auto hello = [&](const std::string& magic, const std::string& t) {
    const int fd = ConnectLoopback(port);
    EXPECT_TRUE(SendAll(fd, magic + t));
    return std::make_pair(fd, RecvUpTo(fd, 1));
  };
  auto [wrong_fd, wrong] = hello(kBulkMagic, std::string(kBulkTokenBytes, 'x'));
  EXPECT_EQ(wrong, "");  // closed without an answer
  auto [magic_fd, bad_magic] = hello("TDBULK99", token);
  EXPECT_EQ(bad_magic, "");
  EXPECT_FALSE(channel->attached());
  auto [fd, answer] = hello(kBulkMagic, token);
  EXPECT_EQ(answer, std::string(1, kBulkAccepted));
  EXPECT_TRUE(channel->attached());
  auto [second_fd, second] = hello(kBulkMagic, token);
  EXPECT_EQ(second, "");  // the channel has its socket
  // The admitted socket carries bytes to the channel.
  ASSERT_TRUE(SendAll(fd, "payload"));
  std::string got(7, '\0');
  ASSERT_TRUE(channel->Read(got.data(), got.size(), "put").ok());
  EXPECT_EQ(got, "payload");
  for (int f : {wrong_fd, magic_fd, fd, second_fd}) close(f);
  listener->reset();  // stops and joins its thread
}

// Connections that never send their hello hold only their own slot: a
// client behind three of them is admitted at once, not after their 2 s
// each (its answer must come within 1.5 s), and the silent ones are closed
// once their time is up.
TEST(BulkListenerTest, SilentConnectionsDelayNoOther) {
  const std::string token(kBulkTokenBytes, 't');
  auto channel = std::make_shared<BulkChannel>();
  auto listener = ListenFor(token, channel);
  ASSERT_TRUE(listener.ok()) << listener.status();
  std::vector<int> silent;
  for (int i = 0; i < 3; ++i) {
    silent.push_back(ConnectLoopback((*listener)->port()));
    ASSERT_TRUE(SendAll(silent.back(), "TDB"));  // a hello that stops
  }
  const int fd = ConnectLoopback((*listener)->port());
  timeval limit{1, 500000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  ASSERT_TRUE(SendAll(fd, std::string(kBulkMagic) + token));
  EXPECT_EQ(RecvUpTo(fd, 1), std::string(1, kBulkAccepted));
  EXPECT_TRUE(channel->attached());
  for (int s : silent) {
    EXPECT_EQ(RecvUpTo(s, 1), "");  // closed by the listener, unanswered
    close(s);
  }
  close(fd);
}

TEST(BulkListenerTest, HostsOfListenAddresses) {
  EXPECT_EQ(TcpHostOf("127.0.0.1:50051"), "127.0.0.1");
  EXPECT_EQ(TcpHostOf("[::1]:0"), "::1");
  EXPECT_EQ(TcpHostOf("0.0.0.0:1"), "0.0.0.0");
  EXPECT_EQ(TcpHostOf("unix:/run/tensord.sock"), "");
  EXPECT_EQ(TcpHostOf("dns:///host:5"), "");
  EXPECT_EQ(TcpHostOf("nohost"), "");
}

}  // namespace
}  // namespace tensord

// A BulkChannel's lanes (proto/bulk_socket.h) on real sockets, in process:
// striped reads, writes and drains that put every lane's span where
// BulkLane says, attach rules, asking for lanes that are not there, a lane
// that closes mid-transfer (the others are woken, not left to the stall
// timeout), Shutdown of a striped read, and the listener's lane hellos.
// Tagged tsan: lanes move on threads of their own.
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/bulk_listener.h"
#include "server/bulk_socket.h"
#include "tests/socket_io.h"

namespace tensord {
namespace {

using ::testing::HasSubstr;

using ::tensord::testing::ConnectLoopback;
using ::tensord::testing::RecvUpTo;
using ::tensord::testing::SendAll;

std::string Bytes(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i % 253);
  return s;
}

// A channel offering `offered` lanes with the first `attached` attached to
// socket pairs; peers()[i] is lane i's other end.
class Lanes {
 public:
  Lanes(uint32_t offered, uint32_t attached,
        absl::Duration stall = absl::Seconds(600))
      : channel_(stall, offered) {
    for (uint32_t lane = 0; lane < attached; ++lane) {
      int fds[2];
      EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
      EXPECT_TRUE(channel_.Attach(fds[0], lane));
      peers_.push_back(fds[1]);
    }
  }
  ~Lanes() {
    for (int fd : peers_) close(fd);
  }
  BulkChannel& channel() { return channel_; }
  int peer(uint32_t lane) const { return peers_[lane]; }

 private:
  BulkChannel channel_;
  std::vector<int> peers_;
};

// Runs `each(lane)` for lanes 0..lanes-1 on threads of their own.
template <typename F>
std::vector<std::thread> OnEachLane(uint32_t lanes, F each) {
  std::vector<std::thread> threads;
  for (uint32_t lane = 0; lane < lanes; ++lane)
    threads.emplace_back(each, lane);
  return threads;
}

void JoinAll(std::vector<std::thread>& threads) {
  for (std::thread& t : threads) t.join();
}

TEST(BulkLanesTest, AStripedReadPutsEveryLanesSpanInPlace) {
  Lanes lanes(4, 3);
  EXPECT_EQ(lanes.channel().lanes_attached(), 3u);
  const std::string bytes = Bytes((size_t{10} << 20) + 12345, 5);
  // Each peer sends its lane's span; more than the sockets buffer, so the
  // lanes must be read at once.
  auto senders = OnEachLane(3, [&](uint32_t lane) {
    const BulkLaneSpan s = BulkLane(bytes.size(), 3, lane);
    EXPECT_TRUE(
        SendAll(lanes.peer(lane), bytes.data() + s.begin, s.end - s.begin));
  });
  std::string got(bytes.size(), '\0');
  absl::Status read = lanes.channel().Read(got.data(), got.size(), "put", 3);
  JoinAll(senders);
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_TRUE(got == bytes);
  // Then a one-lane read goes on lane 0.
  ASSERT_TRUE(SendAll(lanes.peer(0), "tail"));
  std::string tail(4, '\0');
  ASSERT_TRUE(lanes.channel().Read(tail.data(), 4, "put").ok());
  EXPECT_EQ(tail, "tail");
}

TEST(BulkLanesTest, AStripedWriteAndDrainKeepEachLaneInStep) {
  Lanes lanes(2, 2);
  const std::string bytes = Bytes(size_t{9} << 20, 9);
  std::vector<std::string> received(2);
  auto receivers = OnEachLane(2, [&](uint32_t lane) {
    const BulkLaneSpan s = BulkLane(bytes.size(), 2, lane);
    received[lane] = RecvUpTo(lanes.peer(lane), s.end - s.begin);
  });
  absl::Status wrote =
      lanes.channel().Write(bytes.data(), bytes.size(), "get", 2);
  JoinAll(receivers);
  ASSERT_TRUE(wrote.ok()) << wrote;
  EXPECT_TRUE(received[0] + received[1] == bytes);
  // A refused striped Put's bytes are dropped lane by lane; what follows on
  // lane 1 is then the next transfer's.
  const std::string dropped = Bytes(size_t{6} << 20, 1);
  auto senders = OnEachLane(2, [&](uint32_t lane) {
    const BulkLaneSpan s = BulkLane(dropped.size(), 2, lane);
    EXPECT_TRUE(
        SendAll(lanes.peer(lane), dropped.data() + s.begin, s.end - s.begin));
  });
  ASSERT_TRUE(lanes.channel().Discard(dropped.size(), "put", 2).ok());
  JoinAll(senders);
  const std::string next = Bytes(size_t{8} << 20, 3);
  senders = OnEachLane(2, [&](uint32_t lane) {
    const BulkLaneSpan s = BulkLane(next.size(), 2, lane);
    EXPECT_TRUE(
        SendAll(lanes.peer(lane), next.data() + s.begin, s.end - s.begin));
  });
  std::string got(next.size(), '\0');
  absl::Status read = lanes.channel().Read(got.data(), got.size(), "put", 2);
  JoinAll(senders);
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_TRUE(got == next);
}

TEST(BulkLanesTest, EachOfferedLaneAttachesOnce) {
  BulkChannel channel(absl::Seconds(1), 3);
  EXPECT_EQ(channel.lanes_offered(), 3u);
  int a[2], b[2], c[2], d[2];
  for (int* p : {a, b, c, d}) {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, p), 0);
  }
  EXPECT_TRUE(channel.Attach(a[0], 2));
  EXPECT_FALSE(channel.attached());  // lane 0 is not there yet
  EXPECT_EQ(channel.lanes_attached(), 0u);
  EXPECT_FALSE(channel.Attach(b[0], 3));  // not offered
  EXPECT_FALSE(channel.Attach(c[0], 2));  // taken
  EXPECT_TRUE(channel.Attach(d[0], 0));
  EXPECT_EQ(channel.lanes_attached(), 1u);  // 0, not 2: lanes from 0 on
  for (int* p : {a, b, c, d}) close(p[1]);
  // Offers are 1 to kBulkMaxLanes.
  EXPECT_EQ(BulkChannel(absl::Seconds(1), 0).lanes_offered(), 1u);
  EXPECT_EQ(BulkChannel(absl::Seconds(1), 99).lanes_offered(), kBulkMaxLanes);
}

TEST(BulkLanesTest, LanesThatAreNotAttachedBreakTheChannel) {
  Lanes lanes(4, 2);
  std::string got(16 << 20, '\0');
  absl::Status read = lanes.channel().Read(got.data(), got.size(), "put", 3);
  EXPECT_EQ(read.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(read.message(),
            "put: striped over 3 lanes of the bulk socket, but 2 of the 4 "
            "offered are attached");
  // The bytes sent on the two lanes can no longer be matched to commands.
  read = lanes.channel().Read(got.data(), 4, "put of handle 3");
  EXPECT_THAT(read.message(),
              HasSubstr("put of handle 3: the bulk socket is unusable after "
                        "an earlier failure (put: striped over 3 lanes"));
}

TEST(BulkLanesTest, ALaneClosedMidTransferFailsItAndWakesTheOthers) {
  // The stall timeout is 600 s: if the failure did not wake lane 2 (whose
  // peer sends nothing and stays open), the read would outlast the test's
  // own timeout.
  Lanes lanes(3, 3);
  const size_t n = size_t{12} << 20;
  const BulkLaneSpan one = BulkLane(n, 3, 1);
  const std::string bytes = Bytes(n, 2);
  // Lane 0's peer may be cut off mid-send too: the failure shuts every
  // lane down.
  std::thread lane0(
      [&] { SendAll(lanes.peer(0), bytes.data(), BulkLane(n, 3, 0).end); });
  ASSERT_TRUE(SendAll(lanes.peer(1), bytes.data() + one.begin, 1000));
  shutdown(lanes.peer(1), SHUT_WR);  // lane 1 ends early
  std::string got(n, '\0');
  absl::Status read = lanes.channel().Read(got.data(), n, "put of handle 5", 3);
  lane0.join();
  EXPECT_EQ(read.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(read.message(),
            "put of handle 5: lane 1 of the bulk socket closed after 1000 of "
            "4194304 (bytes 4194304 to 8388608 of 12582912) bytes");
  EXPECT_THAT(lanes.channel().Read(got.data(), 1, "put").message(),
              HasSubstr("unusable after an earlier failure"));
}

TEST(BulkLanesTest, ShutdownEndsAStripedReadFromAnotherThread) {
  Lanes lanes(2, 2);
  std::string got(8 << 20, '\0');
  absl::Status read;
  std::thread reader(
      [&] { read = lanes.channel().Read(got.data(), got.size(), "put", 2); });
  // Once the read waits on its lanes, nothing arrives until Shutdown; a
  // Shutdown before the read starts fails it at once just the same.
  lanes.channel().Shutdown();
  reader.join();
  EXPECT_FALSE(read.ok());
  EXPECT_THAT(read.message(), HasSubstr("bulk socket"));
}

TEST(BulkLanesTest, TheListenerAttachesLanesByTheirHello) {
  const std::string token(kBulkTokenBytes, 'q');
  auto channel = std::make_shared<BulkChannel>(absl::Seconds(600), 4);
  auto listener = BulkListener::Start(
      "127.0.0.1", 0, [&](absl::string_view t) -> std::shared_ptr<BulkChannel> {
        return t == token ? channel : nullptr;
      });
  ASSERT_TRUE(listener.ok()) << listener.status();
  const int port = (*listener)->port();
  auto hello = [&](const std::string& bytes) {
    const int fd = ConnectLoopback(port);
    EXPECT_TRUE(SendAll(fd, bytes));
    return std::make_pair(fd, RecvUpTo(fd, 1));
  };
  const std::string yes(1, kBulkAccepted);
  const std::string lane_magic(kBulkLaneMagic, kBulkMagicBytes);
  auto [fd0, a0] = hello(std::string(kBulkMagic) + token);
  auto [fd1, a1] = hello(lane_magic + token + std::string(1, '\1'));
  auto [fd3, a3] = hello(lane_magic + token + std::string(1, '\3'));
  auto [again, a_again] = hello(lane_magic + token + std::string(1, '\1'));
  auto [fd7, a7] = hello(lane_magic + token + std::string(1, '\7'));
  EXPECT_EQ(a0, yes);
  EXPECT_EQ(a1, yes);
  EXPECT_EQ(a3, yes);
  EXPECT_EQ(a_again, "");                    // lane 1 is taken
  EXPECT_EQ(a7, "");                         // 4 lanes offered
  EXPECT_EQ(channel->lanes_attached(), 2u);  // 0 and 1; 3 waits for 2
  // Lane 1 carries the second half of a striped transfer.
  const std::string bytes = Bytes(size_t{8} << 20, 4);
  std::thread second([&, fd = fd1] {
    EXPECT_TRUE(SendAll(fd, bytes.substr(BulkLane(bytes.size(), 2, 1).begin)));
  });
  std::thread first([&, fd = fd0] {
    EXPECT_TRUE(SendAll(fd, bytes.substr(0, BulkLane(bytes.size(), 2, 0).end)));
  });
  std::string got(bytes.size(), '\0');
  absl::Status read = channel->Read(got.data(), got.size(), "put", 2);
  first.join();
  second.join();
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_TRUE(got == bytes);
  for (int fd : {fd0, fd1, fd3, again, fd7}) close(fd);
  listener->reset();
}

}  // namespace
}  // namespace tensord

// The bulk socket's lanes against the real daemon (docs/protocol.md "Bulk
// socket", proto/bulk_socket.h): the offer and --bulk_lanes, striped Puts and
// Gets on raw lane connections (bytes checked against what was sent and
// against the stream's answers), lanes asked for but never attached, a lane
// cut mid-upload, and the C++ client striping transfers by itself
// (ClientOptions::bulk_lanes).
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/tensord_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/bulk_socket.h"
#include "tests/bulk_frames.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"
#include "tests/socket_io.h"

namespace tensord {
namespace {

using ::testing::HasSubstr;

using ::tensord::testing::AddBulkPut;
using ::tensord::testing::AddGet;
using ::tensord::testing::BulkHello;
using ::tensord::testing::Bytes;
using ::tensord::testing::ErrorOf;
using ::tensord::testing::Pattern;
using ::tensord::testing::RawSession;
using ::tensord::testing::RecvUpTo;
using ::tensord::testing::SendAll;

// Lane `lane` of `raw`'s bulk socket, accepted (or -1 when refused).
int AttachLane(const RawSession& raw, uint32_t lane) {
  const int fd =
      testing::ConnectLoopback(static_cast<int>(raw.welcome().bulk_port()));
  std::string hello = absl::StrCat(lane == 0 ? kBulkMagic : kBulkLaneMagic,
                                   raw.welcome().bulk_token());
  if (lane != 0) hello.push_back(static_cast<char>(lane));
  EXPECT_TRUE(SendAll(fd, hello));
  if (RecvUpTo(fd, 1) == std::string(1, kBulkAccepted)) return fd;
  close(fd);
  return -1;
}

std::vector<int> AttachLanes(const RawSession& raw, uint32_t lanes) {
  std::vector<int> fds;
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    fds.push_back(AttachLane(raw, lane));
    EXPECT_GE(fds.back(), 0) << "lane " << lane;
  }
  return fds;
}

// Sends each lane's span of `bytes` at once (a peer may be cut off: no
// expectation on the sends themselves).
std::vector<std::thread> SendStriped(const std::vector<int>& fds,
                                     const std::string& bytes, uint32_t lanes) {
  std::vector<std::thread> senders;
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    senders.emplace_back([&bytes, lanes, lane, fd = fds[lane]] {
      const BulkLaneSpan s = BulkLane(bytes.size(), lanes, lane);
      SendAll(fd, bytes.data() + s.begin, s.end - s.begin);
    });
  }
  return senders;
}

class BulkLanesTest : public testing::DaemonSuite {};

TEST_F(BulkLanesTest, StripedPutsAndGetsMoveEveryLanesSpan) {
  RawSession raw(address(), "", "lanes", BulkHello());
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw.welcome().bulk_lanes(), 4u);  // --bulk_lanes' default
  const std::vector<int> fds = AttachLanes(raw, 3);
  const size_t n = (size_t{13} << 20) / 4 + 7;  // 13 MiB and an odd tail
  const std::vector<float> values = Pattern(n, 0.25f);
  const std::string bytes = Bytes(values);
  const uint64_t x =
      AddBulkPut(raw, static_cast<int64_t>(n), n * sizeof(float), 3);
  std::vector<std::thread> senders = SendStriped(fds, bytes, 3);
  const uint64_t y = raw.NewHandle();
  v1::Call* neg = raw.Add()->mutable_call();
  neg->set_op_id(raw.OpId("neg"));
  neg->add_inputs(x);
  neg->add_outputs(y);
  const uint64_t by_stream = AddGet(raw, x, false, 0);
  const uint64_t by_lanes = AddGet(raw, y, true, 3);
  // 13 MiB over at most 3 lanes of 4 MiB or more: the daemon uses 3.
  std::vector<std::string> received(3);
  std::vector<std::thread> receivers;
  for (uint32_t lane = 0; lane < 3; ++lane) {
    receivers.emplace_back([&, lane] {
      const BulkLaneSpan s = BulkLane(bytes.size(), 3, lane);
      received[lane] = RecvUpTo(fds[lane], s.end - s.begin);
    });
  }
  RawSession::Reply reply = raw.Flush();
  for (std::thread& t : senders) t.join();
  for (std::thread& t : receivers) t.join();
  ASSERT_TRUE(reply.ok);
  EXPECT_EQ(ErrorOf(reply, x), "");
  EXPECT_TRUE(reply.data[by_stream] == bytes);
  EXPECT_EQ(reply.shm_data[by_lanes].payload().bulk().lanes(), 3u);
  EXPECT_EQ(reply.shm_data[by_lanes].payload().bulk().size(), bytes.size());
  std::vector<float> negated(values);
  for (float& v : negated) v = -v;
  EXPECT_TRUE(received[0] + received[1] + received[2] == Bytes(negated));
  for (int fd : fds) close(fd);
}

TEST_F(BulkLanesTest, SmallGetsStayOnLaneZero) {
  RawSession raw(address(), "", "lanes", BulkHello());
  ASSERT_TRUE(raw.ok());
  const std::vector<int> fds = AttachLanes(raw, 4);
  const size_t n = (size_t{6} << 20) / 4;  // 6 MiB: one lane of 4 MiB
  const uint64_t x = raw.PutFloats({static_cast<int64_t>(n)});
  const uint64_t request = AddGet(raw, x, true, 4);
  std::string got;
  std::thread receiver([&] { got = RecvUpTo(fds[0], n * 4); });
  RawSession::Reply reply = raw.Flush();
  receiver.join();
  ASSERT_TRUE(reply.ok);
  EXPECT_EQ(reply.shm_data[request].payload().bulk().lanes(), 0u);
  EXPECT_EQ(got, std::string(n * 4, '\0'));
  for (int fd : fds) close(fd);
}

TEST_F(BulkLanesTest, LanesNotAttachedFailThePutAndTheSocketNotTheSession) {
  RawSession raw(address(), "", "lanes", BulkHello());
  ASSERT_TRUE(raw.ok());
  const std::vector<int> fds = AttachLanes(raw, 2);
  const uint64_t x = AddBulkPut(raw, int64_t{2} << 20, uint64_t{8} << 20, 3);
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_THAT(ErrorOf(reply, x),
              HasSubstr(absl::StrCat("put of handle ", x,
                                     ": striped over 3 lanes of the bulk "
                                     "socket, but 2 of the 4 offered are "
                                     "attached")));
  const uint64_t later = AddBulkPut(raw, 4, 16, 1);
  const uint64_t fine = raw.PutFloats({3});
  const uint64_t request = AddGet(raw, fine, false, 0);
  reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_THAT(ErrorOf(reply, later),
              HasSubstr("unusable after an earlier failure"));
  EXPECT_EQ(reply.data[request], std::string(12, '\0'));
  for (int fd : fds) close(fd);
}

TEST_F(BulkLanesTest, ALaneCutMidUploadFailsThatPutNamingTheLane) {
  RawSession raw(address(), "", "lanes", BulkHello());
  ASSERT_TRUE(raw.ok());
  std::vector<int> fds = AttachLanes(raw, 2);
  const size_t n = (size_t{8} << 20) / 4;
  const uint64_t x =
      AddBulkPut(raw, static_cast<int64_t>(n), n * sizeof(float), 2);
  const std::string bytes = Bytes(Pattern(n, 1.0f));
  std::thread lane0([&, fd = fds[0]] {
    SendAll(fd, bytes.data(), BulkLane(bytes.size(), 2, 0).end);
  });
  ASSERT_TRUE(SendAll(fds[1], bytes.data(), 4096));
  close(fds[1]);
  RawSession::Reply reply = raw.Flush();
  lane0.join();
  ASSERT_TRUE(reply.ok);
  EXPECT_THAT(ErrorOf(reply, x),
              HasSubstr("lane 1 of the bulk socket closed after 4096 of "
                        "4194304 (bytes 4194304 to 8388608 of 8388608) "
                        "bytes"));
  close(fds[0]);
}

TEST_F(BulkLanesTest, LaneHellosBeyondTheOfferOrTwiceAreClosed) {
  RawSession raw(address(), "", "lanes", BulkHello());
  ASSERT_TRUE(raw.ok());
  const int lane0 = AttachLane(raw, 0);
  const int lane3 = AttachLane(raw, 3);
  EXPECT_GE(lane0, 0);
  EXPECT_GE(lane3, 0);
  EXPECT_EQ(AttachLane(raw, 3), -1);  // once
  EXPECT_EQ(AttachLane(raw, 4), -1);  // 4 offered: lanes 0 to 3
  EXPECT_EQ(AttachLane(raw, 255), -1);
  close(lane0);
  close(lane3);
}

TEST_F(BulkLanesTest, TheClientStripesLargeTransfers) {
  const size_t n = (size_t{21} << 20) / 4 + 9;
  const std::vector<float> values = Pattern(n, 0.5f);
  for (uint32_t want : {0u, 1u, 2u, 8u}) {
    ClientOptions options;
    options.address = address();
    options.shm = ClientOptions::ShmMode::kOff;
    options.bulk_lanes = want;
    auto client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status();
    // 0 and 8: the daemon's 4.
    EXPECT_EQ((*client)->bulk_lanes(), want == 0 || want == 8 ? 4u : want);
    Tensor x = (*client)->FromVector(values, {static_cast<int64_t>(n)});
    std::vector<float> tripled(n);
    absl::StatusOr<size_t> wrote =
        (x * 3.0).DownloadInto(tripled.data(), n * sizeof(float));
    ASSERT_TRUE(wrote.ok()) << wrote.status();
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(tripled[i], 3 * values[i]) << i << " with " << want;
    }
    absl::StatusOr<std::vector<float>> back = x.to_vector<float>();
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(*back == values) << want;
  }
}

TEST(BulkLanesFlagTest, TheDaemonOffersItsBulkLanes) {
  auto one = testing::DaemonProcess::Start({"--insecure", "--bulk_lanes=1"});
  ASSERT_TRUE(one.ok()) << one.status();
  RawSession raw((*one)->address(), "", "lanes", BulkHello());
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw.welcome().bulk_lanes(), 1u);
  const int lane0 = AttachLane(raw, 0);
  EXPECT_GE(lane0, 0);
  EXPECT_EQ(AttachLane(raw, 1), -1);
  close(lane0);
  // A client wanting more gets the one offered, and its transfers work.
  ClientOptions options;
  options.address = (*one)->address();
  options.shm = ClientOptions::ShmMode::kOff;
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->bulk_lanes(), 1u);
  const std::vector<float> values = Pattern((size_t{9} << 20) / 4, 2.0f);
  Tensor x = (*client)->FromVector(values, {int64_t{9} << 18});
  absl::StatusOr<std::vector<float>> back = x.to_vector<float>();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == values);
  // Out of range: the daemon refuses to start.
  auto bad = testing::DaemonProcess::Start({"--insecure", "--bulk_lanes=9"});
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace tensord

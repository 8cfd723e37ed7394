// The bulk socket against the real daemon (docs/protocol.md "Bulk socket"):
// raw frames plus a plain TCP connection for what a client library would
// never send (wrong tokens, refused Puts whose bytes still arrive, a socket
// closed or stalled mid-upload), and the C++ client's own use of it. Values
// are checked against the bytes sent and against the stream's answers.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/tensord_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
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

int Port(const std::string& address) {
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port));
  return port;
}

int ConnectTo(int port) {
  const int fd = testing::ConnectLoopback(port);
  EXPECT_GE(fd, 0);
  return fd;
}

// Sends the hello ("TDBULK01" + `token`); the daemon's one-byte answer, or
// "" when it closed the connection instead.
std::string Hello(int fd, const std::string& token) {
  const std::string hello = "TDBULK01" + token;
  EXPECT_TRUE(SendAll(fd, hello.data(), hello.size()));
  return RecvUpTo(fd, 1);
}

// A connected, accepted bulk socket of `raw`'s session.
int Attach(const RawSession& raw) {
  const int fd = ConnectTo(static_cast<int>(raw.welcome().bulk_port()));
  EXPECT_EQ(Hello(fd, raw.welcome().bulk_token()), "Y");
  return fd;
}

// The session goes on: a stream Put and Get of it work.
void ExpectStreamWorks(RawSession& raw) {
  const uint64_t handle = raw.PutFloats({3});
  const uint64_t request = AddGet(raw, handle, /*bulk=*/false);
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_EQ(reply.data[request], std::string(12, '\0'));
}

class BulkSocketTest : public testing::DaemonSuite {};

TEST_F(BulkSocketTest, OfferedOnlyToClientsThatAsk) {
  RawSession plain(address());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain.welcome().bulk_port(), 0u);
  EXPECT_TRUE(plain.welcome().bulk_token().empty());
  RawSession raw(address(), "", "bulk", BulkHello());
  ASSERT_TRUE(raw.ok());
  EXPECT_NE(raw.welcome().bulk_port(), 0u);
  EXPECT_NE(static_cast<int>(raw.welcome().bulk_port()), Port(address()));
  EXPECT_EQ(raw.welcome().bulk_token().size(), 32u);
}

TEST_F(BulkSocketTest, UploadsAndDownloadsTheirBytesOnTheSocket) {
  RawSession raw(address(), "", "bulk", BulkHello());
  ASSERT_TRUE(raw.ok());
  const int fd = Attach(raw);
  const size_t n = (size_t{3} << 20) / 4 + 5;  // 3 MiB and an odd tail
  const std::vector<float> values = Pattern(n, 0.5f);
  const uint64_t x = AddBulkPut(raw, static_cast<int64_t>(n), n * 4);
  // Larger than the socket's buffers: sent while the daemon reads.
  std::thread sender([&] { EXPECT_TRUE(SendAll(fd, values.data(), n * 4)); });
  const uint64_t y = raw.NewHandle();
  v1::Call* neg = raw.Add()->mutable_call();
  neg->set_op_id(raw.OpId("neg"));
  neg->add_inputs(x);
  neg->add_outputs(y);
  const uint64_t by_stream = AddGet(raw, x, /*bulk=*/false);
  const uint64_t by_socket = AddGet(raw, y, /*bulk=*/true);
  std::string received;
  std::thread receiver([&] { received = RecvUpTo(fd, n * 4); });
  RawSession::Reply reply = raw.Flush();
  sender.join();
  receiver.join();
  ASSERT_TRUE(reply.ok);
  EXPECT_EQ(ErrorOf(reply, x), "");
  EXPECT_TRUE(reply.data[by_stream] == Bytes(values));
  const v1::Data& answer = reply.shm_data[by_socket];
  ASSERT_TRUE(answer.payload().has_bulk());
  EXPECT_EQ(answer.payload().bulk().size(), n * 4);
  EXPECT_EQ(answer.total_bytes(), n * 4);
  EXPECT_TRUE(answer.last());
  EXPECT_EQ(answer.meta().shape(0), static_cast<int64_t>(n));
  std::vector<float> negated(values);
  for (float& v : negated) v = -v;
  EXPECT_TRUE(received == Bytes(negated));
  close(fd);
}

TEST_F(BulkSocketTest, WrongTokensAndSecondConnectionsAreClosed) {
  RawSession raw(address(), "", "bulk", BulkHello());
  ASSERT_TRUE(raw.ok());
  const int port = static_cast<int>(raw.welcome().bulk_port());
  std::string wrong = raw.welcome().bulk_token();
  wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
  int fd = ConnectTo(port);
  EXPECT_EQ(Hello(fd, wrong), "");  // closed without an answer
  close(fd);
  fd = ConnectTo(port);
  EXPECT_TRUE(SendAll(fd, "NOTBULK!", 8));
  EXPECT_TRUE(SendAll(fd, raw.welcome().bulk_token().data(), 32));
  EXPECT_EQ(RecvUpTo(fd, 1), "");
  close(fd);
  const int accepted = Attach(raw);  // the token was not used up by those
  fd = ConnectTo(port);
  EXPECT_EQ(Hello(fd, raw.welcome().bulk_token()), "");  // used once
  close(fd);
  // Another session's token names another session: it attaches its own.
  RawSession other(address(), "", "other", BulkHello());
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other.welcome().bulk_token(), raw.welcome().bulk_token());
  const int other_fd = Attach(other);
  ExpectStreamWorks(raw);
  close(accepted);
  close(other_fd);
}

TEST_F(BulkSocketTest, ARefusedPutStillConsumesItsBytes) {
  RawSession raw(address(), "", "bulk", BulkHello());
  ASSERT_TRUE(raw.ok());
  const int fd = Attach(raw);
  // float32[4] holds 16 bytes, the Put announces 4096: refused, and its
  // 4096 bytes are read and dropped so the next Put gets its own.
  const std::vector<float> junk = Pattern(1024, 7.0f);
  const uint64_t bad = AddBulkPut(raw, 4, 4096);
  const std::vector<float> good = Pattern(1000, 0.25f);
  const uint64_t next = AddBulkPut(raw, 1000, 4000);
  const uint64_t request = AddGet(raw, next, /*bulk=*/false);
  ASSERT_TRUE(SendAll(fd, junk.data(), 4096));
  ASSERT_TRUE(SendAll(fd, good.data(), 4000));
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_THAT(ErrorOf(reply, bad),
              HasSubstr("carries 4096 bytes but float32[4] holds 16"));
  EXPECT_EQ(ErrorOf(reply, next), "");
  EXPECT_TRUE(reply.data[request] == Bytes(good));
  close(fd);
}

TEST_F(BulkSocketTest, ASocketClosedMidUploadFailsOnlyThatPut) {
  RawSession raw(address(), "", "bulk", BulkHello());
  RawSession bystander(address(), "", "bystander", BulkHello());
  ASSERT_TRUE(raw.ok() && bystander.ok());
  const int bystander_fd = Attach(bystander);
  const int fd = Attach(raw);
  const uint64_t cut = AddBulkPut(raw, 1 << 20, 4 << 20);
  const std::vector<float> part = Pattern(1 << 18, 1.0f);  // 1 MiB of 4
  ASSERT_TRUE(SendAll(fd, part.data(), 1 << 20));
  close(fd);
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_THAT(ErrorOf(reply, cut),
              HasSubstr("put of handle " + std::to_string(cut) +
                        ": the bulk socket closed after 1048576 "
                        "of 4194304 bytes"));
  // Its byte stream is lost: later bulk Puts fail at once, saying why.
  const uint64_t after = AddBulkPut(raw, 4, 16);
  reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_THAT(ErrorOf(reply, after),
              HasSubstr("unusable after an earlier failure"));
  ExpectStreamWorks(raw);
  // Another session's socket is untouched.
  const std::vector<float> values = Pattern(300, 3.0f);
  const uint64_t theirs = AddBulkPut(bystander, 300, 1200);
  const uint64_t request = AddGet(bystander, theirs, /*bulk=*/false);
  ASSERT_TRUE(SendAll(bystander_fd, values.data(), 1200));
  reply = bystander.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_TRUE(reply.data[request] == Bytes(values));
  close(bystander_fd);
}

TEST_F(BulkSocketTest, WithoutASocketBulkCommandsAreClearErrors) {
  RawSession plain(address());
  ASSERT_TRUE(plain.ok());
  const uint64_t put = AddBulkPut(plain, 4, 16);
  RawSession::Reply reply = plain.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_THAT(ErrorOf(reply, put),
              HasSubstr("payload.bulk without a bulk socket"));
  // Offered but not attached: the Put fails, a Get takes the stream.
  RawSession raw(address(), "", "bulk", BulkHello());
  ASSERT_TRUE(raw.ok());
  const uint64_t early = AddBulkPut(raw, 4, 16);
  const uint64_t zeros = raw.PutFloats({2});
  const uint64_t request = AddGet(raw, zeros, /*bulk=*/true);
  reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_THAT(ErrorOf(reply, early), HasSubstr("no bulk socket attached"));
  EXPECT_EQ(reply.data[request], std::string(8, '\0'));
  EXPECT_EQ(reply.shm_data.count(request), 0u);
}

TEST_F(BulkSocketTest, TheClientLibraryUsesItWithoutARegion) {
  ClientOptions options;
  options.address = address();
  options.shm = ClientOptions::ShmMode::kOff;
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_TRUE((*client)->bulk_active());
  const size_t n = (size_t{5} << 20) / 4 + 3;
  const std::vector<float> values = Pattern(n, 0.125f);
  Tensor x = (*client)->FromVector(values, {static_cast<int64_t>(n)});
  std::vector<float> doubled(n);
  absl::StatusOr<size_t> wrote =
      (x * 2.0).DownloadInto(doubled.data(), n * sizeof(float));
  ASSERT_TRUE(wrote.ok()) << wrote.status();
  EXPECT_EQ(*wrote, n * sizeof(float));
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(doubled[i], 2 * values[i]) << i;
  absl::StatusOr<std::vector<float>> back = x.to_vector<float>();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == values);
  // Off by option: the stream carries the same transfer.
  options.bulk = false;
  auto streamed = Client::Connect(options);
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_FALSE((*streamed)->bulk_active());
  Tensor y = (*streamed)->FromVector(values, {static_cast<int64_t>(n)});
  back = (y * 2.0).to_vector<float>();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == doubled);
}

// A client that stops sending without closing: the Put fails after the
// daemon's --bulk_stall, and the session goes on.
TEST(BulkSocketStallTest, AStalledUploadFailsAfterTheStallTimeout) {
  auto daemon =
      testing::DaemonProcess::Start({"--insecure", "--bulk_stall=300ms"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  RawSession raw((*daemon)->address(), "", "bulk", BulkHello());
  ASSERT_TRUE(raw.ok());
  const int fd = Attach(raw);
  const uint64_t stalled = AddBulkPut(raw, 1024, 4096);
  ASSERT_TRUE(SendAll(fd, std::string(100, 'x').data(), 100));
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_THAT(ErrorOf(reply, stalled),
              HasSubstr("the bulk socket moved no byte for 300ms after 100 of "
                        "4096 bytes"));
  ExpectStreamWorks(raw);
  close(fd);
}

}  // namespace
}  // namespace tensord

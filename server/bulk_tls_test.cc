// The bulk socket's lanes under TLS (server/bulk_tls.h), in process, with
// certificates made by openssl in the set-up: striped reads and writes
// through TLS arrive as sent, a plaintext hello or a client without the
// certificate mutual TLS asks for is closed without an answer, a stalled
// handshake delays no other connection's, a peer that stops mid-transfer
// fails it within the stall timeout, and files OpenSSL refuses are an error.
// Tagged tsan: lanes move on threads of their own.
#include "server/bulk_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/bulk_listener.h"
#include "server/bulk_socket.h"
#include "tests/socket_io.h"
#include "tests/test_certs.h"

namespace tensord {
namespace {

using ::tensord::testing::ConnectLoopback;
using ::tensord::testing::RecvUpTo;
using ::tensord::testing::SendAll;
using ::testing::HasSubstr;

std::string Bytes(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i % 251);
  return s;
}

// A CA, a server certificate for 127.0.0.1 and a client certificate
// (tests/test_certs.h).
const ::tensord::testing::TestCerts& Certs() {
  static const auto* certs =
      new ::tensord::testing::TestCerts("bulk_tls_certs", "IP:127.0.0.1");
  return *certs;
}

// A blocking TLS client connection to the loopback `port`, verifying the
// daemon against the test CA, with the client certificate if `cert`.
class TlsClient {
 public:
  TlsClient(int port, bool cert) : ctx_(SSL_CTX_new(TLS_client_method())) {
    const auto& c = Certs();
    SSL_CTX_load_verify_locations(ctx_, c.path("ca.pem").c_str(), nullptr);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (cert) {
      SSL_CTX_use_certificate_chain_file(ctx_, c.path("client.pem").c_str());
      SSL_CTX_use_PrivateKey_file(ctx_, c.path("client.key").c_str(),
                                  SSL_FILETYPE_PEM);
    }
    fd_ = ConnectLoopback(port);
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    SSL_set1_host(ssl_, "127.0.0.1");
    connected_ = SSL_connect(ssl_) == 1;
    ERR_clear_error();
  }
  ~TlsClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    close(fd_);
  }
  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    size_t sent = 0;
    return SSL_write_ex(ssl_, bytes.data(), bytes.size(), &sent) == 1 &&
           sent == bytes.size();
  }
  // Up to `n` bytes, fewer where the connection ends or fails first.
  std::string Recv(size_t n) {
    std::string out(n, '\0');
    size_t got = 0;
    while (got < n) {
      size_t r = 0;
      if (SSL_read_ex(ssl_, out.data() + got, n - got, &r) != 1) break;
      got += r;
    }
    ERR_clear_error();
    out.resize(got);
    return out;
  }

 private:
  SSL_CTX* ctx_;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool connected_ = false;
};

const std::string kToken(kBulkTokenBytes, 't');

std::string Hello(uint32_t lane) {
  if (lane == 0) return std::string(kBulkMagic) + kToken;
  return std::string(kBulkLaneMagic, kBulkMagicBytes) + kToken +
         std::string(1, static_cast<char>(lane));
}

// A TLS listener whose one session (kToken) offers `lanes` lanes.
class TlsListener {
 public:
  explicit TlsListener(uint32_t lanes, bool mutual = false,
                       absl::Duration stall = absl::Seconds(600))
      : channel_(std::make_shared<BulkChannel>(stall, lanes)) {
    const auto& c = Certs();
    auto tls = BulkTls::Create(c.path("server.pem"), c.path("server.key"),
                               mutual ? c.path("ca.pem") : "");
    EXPECT_TRUE(tls.ok()) << tls.status();
    auto listener = BulkListener::Start(
        "127.0.0.1", 0,
        [this](absl::string_view t) -> std::shared_ptr<BulkChannel> {
          return t == kToken ? channel_ : nullptr;
        },
        tls.ok() ? *tls : nullptr);
    EXPECT_TRUE(listener.ok()) << listener.status();
    if (listener.ok()) listener_ = *std::move(listener);
  }
  int port() const { return listener_->port(); }
  BulkChannel& channel() { return *channel_; }

 private:
  std::shared_ptr<BulkChannel> channel_;
  std::unique_ptr<BulkListener> listener_;
};

class BulkTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Certs().made())
        << "openssl could not make the test certificates";
  }
};

TEST_F(BulkTlsTest, StripedTransfersThroughTlsArriveAsSent) {
  TlsListener listener(2);
  TlsClient lane0(listener.port(), false), lane1(listener.port(), false);
  ASSERT_TRUE(lane0.connected() && lane1.connected());
  ASSERT_TRUE(lane0.Send(Hello(0)));
  ASSERT_EQ(lane0.Recv(1), std::string(1, kBulkAccepted));
  ASSERT_TRUE(lane1.Send(Hello(1)));
  ASSERT_EQ(lane1.Recv(1), std::string(1, kBulkAccepted));
  ASSERT_EQ(listener.channel().lanes_attached(), 2u);

  // 9 MiB + 77: lane spans that are not whole TLS records.
  const std::string up = Bytes((size_t{9} << 20) + 77, 3);
  const BulkLaneSpan s0 = BulkLane(up.size(), 2, 0);
  const BulkLaneSpan s1 = BulkLane(up.size(), 2, 1);
  std::thread send1(
      [&] { EXPECT_TRUE(lane1.Send(up.substr(s1.begin, s1.end - s1.begin))); });
  std::thread send0(
      [&] { EXPECT_TRUE(lane0.Send(up.substr(s0.begin, s0.end - s0.begin))); });
  std::string got(up.size(), '\0');
  absl::Status read = listener.channel().Read(got.data(), got.size(), "put", 2);
  send0.join();
  send1.join();
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_TRUE(got == up);

  const std::string down = Bytes((size_t{5} << 20) + 3, 9);
  const BulkLaneSpan d0 = BulkLane(down.size(), 2, 0);
  const BulkLaneSpan d1 = BulkLane(down.size(), 2, 1);
  std::string got0, got1;
  std::thread recv0([&] { got0 = lane0.Recv(d0.end - d0.begin); });
  std::thread recv1([&] { got1 = lane1.Recv(d1.end - d1.begin); });
  absl::Status write =
      listener.channel().Write(down.data(), down.size(), "get", 2);
  recv0.join();
  recv1.join();
  ASSERT_TRUE(write.ok()) << write;
  EXPECT_TRUE(got0 + got1 == down);
}

TEST_F(BulkTlsTest, APlaintextHelloIsClosedWithoutAnAnswer) {
  TlsListener listener(1);
  const int fd = ConnectLoopback(listener.port());
  ASSERT_TRUE(SendAll(fd, Hello(0)));
  const std::string answer = RecvUpTo(fd, 64);  // a TLS alert at most
  EXPECT_NE(answer.substr(0, 1), std::string(1, kBulkAccepted));
  close(fd);
  EXPECT_EQ(listener.channel().lanes_attached(), 0u);
  // The token still admits lane 0 through TLS.
  TlsClient lane(listener.port(), false);
  ASSERT_TRUE(lane.connected() && lane.Send(Hello(0)));
  EXPECT_EQ(lane.Recv(1), std::string(1, kBulkAccepted));
}

TEST_F(BulkTlsTest, MutualTlsRefusesALaneWithoutTheClientCertificate) {
  TlsListener listener(2, /*mutual=*/true);
  TlsClient without(listener.port(), false);
  // TLS 1.3: the client's handshake may end before the daemon's refusal.
  if (without.connected() && without.Send(Hello(0))) {
    EXPECT_EQ(without.Recv(1), "");
  }
  EXPECT_EQ(listener.channel().lanes_attached(), 0u);
  TlsClient with(listener.port(), true);
  ASSERT_TRUE(with.connected() && with.Send(Hello(0)));
  EXPECT_EQ(with.Recv(1), std::string(1, kBulkAccepted));
}

TEST_F(BulkTlsTest, AStalledHandshakeDelaysNoOtherConnection) {
  TlsListener listener(1);
  const int silent = ConnectLoopback(listener.port());
  const int partial = ConnectLoopback(listener.port());
  // A TLS record header announcing 300 bytes of ClientHello, then nothing.
  ASSERT_TRUE(SendAll(partial, std::string("\x16\x03\x01\x01\x2c\x01", 6)));
  const absl::Time start = absl::Now();
  TlsClient lane(listener.port(), false);
  ASSERT_TRUE(lane.connected() && lane.Send(Hello(0)));
  EXPECT_EQ(lane.Recv(1), std::string(1, kBulkAccepted));
  // The stalled ones are dropped at 2 s; a blocked acceptor answers after.
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(RecvUpTo(silent, 1), "");  // closed in the end, unanswered
  close(silent);
  close(partial);
}

TEST_F(BulkTlsTest, APeerThatStopsMidTransferFailsItWithinTheStall) {
  TlsListener listener(1, false, absl::Milliseconds(300));
  TlsClient lane(listener.port(), false);
  ASSERT_TRUE(lane.connected() && lane.Send(Hello(0)));
  ASSERT_EQ(lane.Recv(1), std::string(1, kBulkAccepted));
  ASSERT_TRUE(lane.Send(Bytes(1000, 1)));
  std::string got(1 << 20, '\0');
  absl::Status read =
      listener.channel().Read(got.data(), got.size(), "put of handle 7");
  EXPECT_EQ(read.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(read.message(), HasSubstr("moved no byte"));
  EXPECT_THAT(read.message(), HasSubstr("after 1000 of"));
}

TEST_F(BulkTlsTest, FilesOpenSslRefusesAreAnError) {
  const auto& c = Certs();
  auto missing = BulkTls::Create(c.path("nope.pem"), c.path("server.key"), "");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope.pem"));
  auto mismatched =
      BulkTls::Create(c.path("server.pem"), c.path("client.key"), "");
  EXPECT_EQ(mismatched.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tensord

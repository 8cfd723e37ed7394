// The C++ client's bulk socket lanes under TLS (client/bulk_tls_client.h),
// with certificates made by openssl in the set-up. In process, against the
// daemon's TLS lane listener (server/bulk_tls.h): striped transfers arrive as
// sent; a wrong CA, a certificate for another host, a refused client
// certificate or unusable PEM text leave the lanes off with a reason that
// shows no PEM. Against the real daemon: 32 MiB up and down bit-exact over
// TLS lanes, with mutual TLS too; a wrong CA fails the session cleanly at
// Connect (its stream checks the same roots), as the Python client's does.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/bulk_connection.h"
#include "client/tensord_client.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/bulk_socket.h"
#include "runtime/core/mutex.h"
#include "server/bulk_listener.h"
#include "server/bulk_socket.h"
#include "server/bulk_tls.h"
#include "tests/daemon_process.h"
#include "tests/test_certs.h"

namespace tensord {
namespace {

using ::tensord::internal::BulkConnection;
using ::testing::HasSubstr;
using ::testing::Not;

// Two CAs; a server certificate for IP 127.0.0.1 alone and a client
// certificate, both signed by the first (tests/test_certs.h).
const ::tensord::testing::TestCerts& Certs() {
  static const auto* certs =
      new ::tensord::testing::TestCerts("bulk_tls_lanes_certs", "IP:127.0.0.1");
  return *certs;
}

// Verifies against `ca` ("ca.pem" or "other.pem"); with the client
// certificate if `mutual`.
TlsCredentials Tls(const std::string& ca, bool mutual) {
  TlsCredentials tls;
  tls.root_certificates = Certs().Read(ca);
  if (mutual) {
    tls.private_key = Certs().Read("client.key");
    tls.certificate_chain = Certs().Read("client.pem");
  }
  return tls;
}

std::string Bytes(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i % 251);
  return s;
}

const std::string kToken(kBulkTokenBytes, 't');

// The daemon's TLS lane listener, in process, for one session (kToken)
// offering `lanes` lanes; `mutual`: client certificates required.
class TlsListener {
 public:
  TlsListener(uint32_t lanes, bool mutual)
      : channel_(std::make_shared<BulkChannel>(absl::Seconds(60), lanes)) {
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
  uint32_t port() const { return static_cast<uint32_t>(listener_->port()); }
  BulkChannel& channel() { return *channel_; }

 private:
  std::shared_ptr<BulkChannel> channel_;
  std::unique_ptr<BulkListener> listener_;
};

// A client's lanes to `listener`, the session's address naming `host`.
std::unique_ptr<BulkConnection> Lanes(const TlsListener& listener,
                                      TlsCredentials tls, uint32_t lanes,
                                      const std::string& host = "127.0.0.1") {
  ClientOptions options;
  options.address = host + ":1";  // the stream's port: unused here
  options.tls = std::move(tls);
  options.connect_timeout = absl::Seconds(30);
  return std::make_unique<BulkConnection>(options, listener.port(), kToken,
                                          lanes);
}

class BulkTlsLanesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Certs().made())
        << "openssl could not make the test certificates";
  }
};

TEST_F(BulkTlsLanesTest, StripedTransfersThroughTlsLanesArriveAsSent) {
  TlsListener listener(2, /*mutual=*/false);
  auto lanes = Lanes(listener, Tls("ca.pem", false), 2);
  ASSERT_TRUE(lanes->Usable()) << lanes->refusal();
  EXPECT_EQ(lanes->lanes(), 2u);
  EXPECT_EQ(lanes->refusal(), "");
  EXPECT_EQ(listener.channel().lanes_attached(), 2u);

  // 9 MiB + 77: spans that are not whole TLS records.
  const std::string up = Bytes((size_t{9} << 20) + 77, 3);
  std::string got(up.size(), '\0');
  absl::Status read;
  std::thread daemon([&] {
    read = listener.channel().Read(got.data(), got.size(), "put", 2);
  });
  {
    MutexLock lock(lanes->mu());
    EXPECT_TRUE(lanes->SendLocked(7, up.data(), up.size(), 2).ok());
  }
  daemon.join();
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_TRUE(got == up);

  const std::string down = Bytes((size_t{5} << 20) + 3, 9);
  std::string received(down.size(), '\0');
  absl::Status wrote;
  daemon = std::thread([&] {
    wrote = listener.channel().Write(down.data(), down.size(), "get", 2);
  });
  absl::Status moved;
  {
    MutexLock lock(lanes->mu());
    moved = lanes->ReceiveLocked(8, received.data(), received.size(), 2);
  }
  daemon.join();
  ASSERT_TRUE(wrote.ok()) << wrote;
  ASSERT_TRUE(moved.ok()) << moved;
  EXPECT_TRUE(received == down);
}

TEST_F(BulkTlsLanesTest, AWrongCaLeavesTheLanesOffSayingWhy) {
  TlsListener listener(2, false);
  auto lanes = Lanes(listener, Tls("other.pem", false), 2);
  EXPECT_FALSE(lanes->Usable());
  EXPECT_EQ(lanes->lanes(), 0u);
  EXPECT_THAT(lanes->refusal(),
              HasSubstr("TLS handshake with tensord's bulk socket at "
                        "127.0.0.1 failed: certificate verify failed"));
  EXPECT_THAT(lanes->refusal(), Not(HasSubstr("BEGIN")));
  EXPECT_EQ(listener.channel().lanes_attached(), 0u);
}

TEST_F(BulkTlsLanesTest, ACertificateForAnotherHostIsRefused) {
  // The certificate names IP 127.0.0.1 only; "localhost" is checked against
  // its DNS names (none) and then its CN ("server").
  TlsListener listener(1, false);
  auto lanes = Lanes(listener, Tls("ca.pem", false), 1, "localhost");
  EXPECT_FALSE(lanes->Usable());
  EXPECT_THAT(lanes->refusal(), HasSubstr("hostname mismatch"));
}

TEST_F(BulkTlsLanesTest, MutualTlsPresentsTheClientCertificate) {
  TlsListener listener(2, /*mutual=*/true);
  auto with_cert = Lanes(listener, Tls("ca.pem", true), 2);
  ASSERT_TRUE(with_cert->Usable()) << with_cert->refusal();
  EXPECT_EQ(with_cert->lanes(), 2u);
  const std::string up = Bytes(size_t{3} << 20, 5);
  std::string got(up.size(), '\0');
  absl::Status read;
  std::thread daemon(
      [&] { read = listener.channel().Read(got.data(), got.size(), "put"); });
  {
    MutexLock lock(with_cert->mu());
    EXPECT_TRUE(with_cert->SendLocked(9, up.data(), up.size(), 1).ok());
  }
  daemon.join();
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_TRUE(got == up);
}

TEST_F(BulkTlsLanesTest, MutualTlsWithoutAClientCertificateIsRefused) {
  TlsListener listener(1, /*mutual=*/true);
  auto anonymous = Lanes(listener, Tls("ca.pem", false), 1);
  EXPECT_FALSE(anonymous->Usable());
  // TLS 1.3 ends the client's handshake before the daemon checks it: the
  // refusal comes as an alert in the hello's answer (TLS 1.2: in the
  // handshake).
  EXPECT_THAT(anonymous->refusal(), HasSubstr("tensord's bulk socket at "));
  EXPECT_EQ(listener.channel().lanes_attached(), 0u);
}

TEST_F(BulkTlsLanesTest, UnusablePemTextIsNamedNotShown) {
  TlsListener listener(1, false);
  TlsCredentials bad = Tls("ca.pem", true);
  bad.root_certificates = "not a certificate";
  auto no_roots = Lanes(listener, bad, 1);
  EXPECT_FALSE(no_roots->Usable());
  EXPECT_THAT(no_roots->refusal(),
              HasSubstr("root_certificates holds no PEM certificate"));
  bad = Tls("ca.pem", true);
  bad.private_key = Certs().Read("other.key");  // not the cert's
  auto mismatched = Lanes(listener, bad, 1);
  EXPECT_FALSE(mismatched->Usable());
  EXPECT_THAT(mismatched->refusal(), HasSubstr("cannot use "
                                               "ClientOptions::tls->"
                                               "certificate_chain"));
  EXPECT_THAT(mismatched->refusal(), Not(HasSubstr("PRIVATE KEY-----")));
}

// Against the real daemon.

std::vector<float> Pattern(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(static_cast<int>(i % 65521) - 32760) * 0.125f;
  }
  return v;
}

absl::StatusOr<std::unique_ptr<Client>> ConnectTls(const std::string& address,
                                                   TlsCredentials tls) {
  ClientOptions options;
  options.address = address;
  options.tls = std::move(tls);
  options.shm = ClientOptions::ShmMode::kOff;  // the remote transport
  options.connect_timeout = absl::Seconds(60);
  return Client::Connect(options);
}

// 32 MiB up (FromVector) and down (to_vector, DownloadInto), bit-exact,
// with the lanes still up afterwards: a failed lane transfer drops them.
void MovesThirtyTwoMiBOverTheLanes(Client& client) {
  ASSERT_TRUE(client.bulk_active()) << client.bulk_refusal();
  EXPECT_EQ(client.bulk_lanes(), 4u);  // --bulk_lanes' default
  const size_t n = (size_t{32} << 20) / sizeof(float);
  const std::vector<float> values = Pattern(n);
  Tensor x = client.FromVector(values, {static_cast<int64_t>(n)});
  absl::StatusOr<std::vector<float>> back = x.to_vector<float>();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::memcmp(back->data(), values.data(), n * sizeof(float)), 0);
  std::vector<float> negated(n);
  absl::StatusOr<size_t> wrote =
      (-x).DownloadInto(negated.data(), n * sizeof(float));
  ASSERT_TRUE(wrote.ok()) << wrote.status();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(negated[i], -values[i]) << i;
  EXPECT_EQ(client.bulk_lanes(), 4u);
  EXPECT_EQ(client.bulk_refusal(), "");
}

TEST_F(BulkTlsLanesTest, TheClientMovesLargeTensorsOverTlsLanes) {
  auto d = testing::DaemonProcess::Start(
      {"--insecure", "--tls_cert=" + Certs().path("server.pem"),
       "--tls_key=" + Certs().path("server.key")});
  ASSERT_TRUE(d.ok()) << d.status();
  auto c = ConnectTls((*d)->address(), Tls("ca.pem", false));
  ASSERT_TRUE(c.ok()) << c.status();
  MovesThirtyTwoMiBOverTheLanes(**c);
}

TEST_F(BulkTlsLanesTest, MutualTlsSessionsUseTheLanesToo) {
  auto d = testing::DaemonProcess::Start(
      {"--insecure", "--tls_cert=" + Certs().path("server.pem"),
       "--tls_key=" + Certs().path("server.key"),
       "--tls_client_ca=" + Certs().path("ca.pem")});
  ASSERT_TRUE(d.ok()) << d.status();
  auto c = ConnectTls((*d)->address(), Tls("ca.pem", true));
  ASSERT_TRUE(c.ok()) << c.status();
  MovesThirtyTwoMiBOverTheLanes(**c);
}

TEST_F(BulkTlsLanesTest, AWrongCaFailsTheSessionAtConnect) {
  auto d = testing::DaemonProcess::Start(
      {"--insecure", "--tls_cert=" + Certs().path("server.pem"),
       "--tls_key=" + Certs().path("server.key")});
  ASSERT_TRUE(d.ok()) << d.status();
  ClientOptions options;
  options.address = (*d)->address();
  options.tls = Tls("other.pem", false);
  options.connect_timeout = absl::Seconds(3);  // it can only time out
  auto c = Client::Connect(options);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable) << c.status();
}

TEST_F(BulkTlsLanesTest, TlsAndOpaqueCredentialsDoNotMix) {
  ClientOptions options;
  options.address = "127.0.0.1:1";
  options.tls = Tls("ca.pem", false);
  options.credentials = grpc::InsecureChannelCredentials();
  auto c = Client::Connect(options);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  options.credentials = nullptr;
  options.tls->private_key = "x";  // without its certificate
  c = Client::Connect(options);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("go together"));
}

}  // namespace
}  // namespace tensord

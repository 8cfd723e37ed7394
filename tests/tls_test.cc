// Transport security against the real daemon: TLS, mutual TLS with
// certificates made by openssl in the set-up, and the Unix socket's mode.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "client/tensord_client.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/test_certs.h"

namespace tensord {
namespace {

using ::tensord::testing::TestCerts;

// The server certificate's names: the loopback address and localhost.
constexpr char kSan[] = "IP:127.0.0.1,DNS:localhost";

// A connection the daemon must accept gets a generous deadline (a loaded CI
// machine can take seconds over a TLS handshake); one it must refuse can only
// show that by not connecting, so it gets a short one.
constexpr absl::Duration kAccepted = absl::Seconds(60);
constexpr absl::Duration kRefused = absl::Seconds(3);

absl::StatusOr<std::unique_ptr<Client>> ConnectWith(
    const std::string& address, std::shared_ptr<grpc::ChannelCredentials> creds,
    absl::Duration timeout) {
  ClientOptions options;
  options.address = address;
  options.credentials = std::move(creds);
  options.connect_timeout = timeout;
  return Client::Connect(options);
}

TEST(TlsTest, TlsServesTlsClientsOnly) {
  TestCerts certs("tls_certs", kSan);
  ASSERT_TRUE(certs.made()) << "openssl failed";
  auto d = testing::DaemonProcess::Start(
      {"--insecure", "--tls_cert=" + certs.path("server.pem"),
       "--tls_key=" + certs.path("server.key")});
  ASSERT_TRUE(d.ok()) << d.status();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = certs.Read("ca.pem");
  auto c = ConnectWith((*d)->address(), grpc::SslCredentials(ssl), kAccepted);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*(*c)->FromVector<float>({4, 5}, {2}).sum().item<float>(), 9.0f);
  EXPECT_FALSE(
      ConnectWith((*d)->address(), grpc::InsecureChannelCredentials(), kRefused)
          .ok());
}

TEST(TlsTest, MutualTlsRequiresAClientCertificate) {
  TestCerts certs("tls_certs", kSan);
  ASSERT_TRUE(certs.made());
  auto d = testing::DaemonProcess::Start(
      {"--insecure", "--tls_cert=" + certs.path("server.pem"),
       "--tls_key=" + certs.path("server.key"),
       "--tls_client_ca=" + certs.path("ca.pem")});
  ASSERT_TRUE(d.ok()) << d.status();
  grpc::SslCredentialsOptions anonymous;
  anonymous.pem_root_certs = certs.Read("ca.pem");
  EXPECT_FALSE(
      ConnectWith((*d)->address(), grpc::SslCredentials(anonymous), kRefused)
          .ok());
  grpc::SslCredentialsOptions with_cert = anonymous;
  with_cert.pem_private_key = certs.Read("client.key");
  with_cert.pem_cert_chain = certs.Read("client.pem");
  auto c =
      ConnectWith((*d)->address(), grpc::SslCredentials(with_cert), kAccepted);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*(*c)->FromVector<float>({1, 2}, {2}).sum().item<float>(), 3.0f);
}

TEST(TlsTest, UnixSocketModeIsTheGate) {
  // Socket paths are limited to 107 bytes: a short directory of our own.
  char dir[] = "/tmp/tensord-sock-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/tensord.sock";
  auto d = testing::DaemonProcess::Start(
      {"--insecure", "--listen=unix:" + path, "--unix_socket_mode=0600"});
  ASSERT_TRUE(d.ok()) << d.status();
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto c = ConnectWith("unix:" + path, nullptr, kAccepted);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*(*c)->FromVector<float>({7}, {1}).item<float>(), 7.0f);
  c->reset();
  EXPECT_EQ((*d)->Terminate(), 0);
  unlink(path.c_str());
  rmdir(dir);
}

TEST(TlsTest, RefusesToStartOpenByAccident) {
  auto d = testing::DaemonProcess::Start({});  // neither tokens nor --insecure
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("refusing to start"), std::string::npos)
      << d.status();
}

}  // namespace
}  // namespace tensord

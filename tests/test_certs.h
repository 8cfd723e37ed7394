// Certificates for the TLS tests (tests/tls_test.cc,
// tests/bulk_tls_lanes_test.cc, server/bulk_tls_test.cc), made with the openssl
// command when a test first asks: a CA (ca.pem, ca.key), a second CA that signs
// nothing (other.pem), a server certificate (server.pem, server.key; CN=server,
// the given subjectAltName) and a client certificate (client.pem, client.key;
// CN=client), both signed by the first CA, valid for a day.
#ifndef TENSORD_TESTS_TEST_CERTS_H_
#define TENSORD_TESTS_TEST_CERTS_H_

#include <string>

namespace tensord {
namespace testing {

class TestCerts {
 public:
  // Under ::testing::TempDir()/`dir`; `san` as openssl's subjectAltName
  // ("IP:127.0.0.1", "IP:127.0.0.1,DNS:localhost").
  TestCerts(const std::string& dir, const std::string& san);

  // Whether openssl made every file.
  bool made() const { return made_; }
  std::string path(const std::string& file) const;
  // The file's contents (PEM text).
  std::string Read(const std::string& file) const;

 private:
  std::string dir_;
  bool made_ = false;
};

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_TESTS_TEST_CERTS_H_

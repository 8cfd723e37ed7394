#include "tests/test_certs.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tensord {
namespace testing {

TestCerts::TestCerts(const std::string& dir, const std::string& san)
    : dir_(::testing::TempDir() + "/" + dir) {
  const std::string req = "openssl req -newkey rsa:2048 -nodes ";
  const std::string sign =
      "openssl x509 -req -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 ";
  const std::string script = absl::StrCat(
      "set -e; mkdir -p ", dir_, "; cd ", dir_, "; exec 2>/dev/null;",
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
      "-days 1 -subj /CN=test-ca;",
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out "
      "other.pem -days 1 -subj /CN=other-ca;",
      "printf 'subjectAltName=", san, "' > san.ext;", req,
      "-keyout server.key -out server.csr -subj /CN=server;", sign,
      "-in server.csr -out server.pem -extfile san.ext;", req,
      "-keyout client.key -out client.csr -subj /CN=client;", sign,
      "-in client.csr -out client.pem");
  made_ = std::system(script.c_str()) == 0;
}

std::string TestCerts::path(const std::string& file) const {
  return dir_ + "/" + file;
}

std::string TestCerts::Read(const std::string& file) const {
  std::ifstream in(path(file));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace testing
}  // namespace tensord

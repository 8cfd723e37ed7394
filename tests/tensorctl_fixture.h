// The fixture of the tensorctl end-to-end tests: one real tensord per
// suite, C++ clients to make tensors on it, and the real tensorctl binary
// run through popen as an operator would, with helpers to read its --json
// output without a JSON library.
#ifndef TENSORD_TESTS_TENSORCTL_FIXTURE_H_
#define TENSORD_TESTS_TENSORCTL_FIXTURE_H_

#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/tensord_client.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"

namespace tensord {
namespace testing {

// What one tensorctl run printed and how it exited.
struct CtlResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// The built tensorctl binary, from the test's runfiles.
inline std::string TensorctlPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir && workspace) {
    return absl::StrCat(srcdir, "/", workspace, "/tools/tensorctl");
  }
  return "bazel-bin/tools/tensorctl";
}

// The value of the first `"key":NUMBER` in `json`, or -1.
inline int64_t JsonNumber(const std::string& json, const std::string& key) {
  const std::regex re("\"" + std::regex_replace(key, std::regex("\\."), "\\.") +
                      "\":(-?[0-9]+)");
  std::smatch m;
  return std::regex_search(json, m, re) ? std::stoll(m[1]) : -1;
}

// Brackets and braces balance outside strings and the text is one value:
// enough to catch truncated or interleaved output without a JSON library.
inline bool BalancedJson(const std::string& text) {
  std::string stack;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      stack.push_back(c == '{' ? '}' : ']');
    } else if (c == '}' || c == ']') {
      if (stack.empty() || stack.back() != c) return false;
      stack.pop_back();
      if (stack.empty() &&
          text.find_first_not_of(" \n", i + 1) != std::string::npos) {
        return false;
      }
    }
  }
  return !in_string && stack.empty() && !text.empty() && text[0] == '{';
}

class TensorctlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto d = testing::DaemonProcess::Start();
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  std::unique_ptr<Client> Connect(
      const std::string& name,
      ClientOptions::ShmMode shm = ClientOptions::ShmMode::kAuto) {
    ClientOptions options;
    options.address = daemon_->address();
    options.client_name = name;
    options.shm = shm;
    auto c = Client::Connect(options);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  // `n` float32 zeros on the cpu device, uploaded and synchronized.
  static Tensor Floats(Client& c, int64_t n) {
    UploadOptions options;
    options.device = "cpu";
    Tensor t = c.FromVector<float>(std::vector<float>(n), {n}, options);
    EXPECT_TRUE(c.synchronize().ok());
    return t;
  }

  static CtlResult Ctl(const std::string& args) {
    const std::string command = absl::StrCat(
        TensorctlPath(), " --server=", daemon_->address(), " ", args, " 2>&1");
    CtlResult result;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return result;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0)
      result.output.append(buf, n);
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
  }

  static int64_t CpuStat(const std::string& key) {
    const CtlResult r = Ctl("memory --device=cpu --json");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return JsonNumber(r.output, key);
  }

  inline static testing::DaemonProcess* daemon_ = nullptr;
};

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_TESTS_TENSORCTL_FIXTURE_H_

// Helpers shared by the security tests: a tokens file for the daemon and
// the real tensorctl, run as an operator would.
#ifndef TENSORD_TESTS_SECURITY_SECURITY_ENV_H_
#define TENSORD_TESTS_SECURITY_SECURITY_ENV_H_

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tensord {
namespace testing {

// A file `name` in the test's temporary directory holding `contents`, with
// `mode`; returns its path.
inline std::string WriteTestFile(const std::string& name,
                                 const std::string& contents,
                                 mode_t mode = 0600) {
  const std::string path = ::testing::TempDir() + "/" + name;
  { std::ofstream(path, std::ios::trunc) << contents; }
  chmod(path.c_str(), mode);
  return path;
}

// The built binary `package/name` from the test's runfiles.
inline std::string RunfilePath(const std::string& package_and_name) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir && workspace) {
    return absl::StrCat(srcdir, "/", workspace, "/", package_and_name);
  }
  return "bazel-bin/" + package_and_name;
}

struct CtlResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr, as the operator's terminal gets
};

// Runs `tensorctl --server=ADDRESS [--token=TOKEN] ARGS`.
inline CtlResult RunTensorctl(const std::string& address,
                              const std::string& token,
                              const std::string& args) {
  const std::string command =
      absl::StrCat(RunfilePath("tools/tensorctl"), " --server=", address,
                   token.empty() ? "" : " --token=", token, " ", args, " 2>&1");
  CtlResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) {
    result.output.append(buf, n);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_TESTS_SECURITY_SECURITY_ENV_H_

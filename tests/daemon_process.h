// Starts the real tensord binary for integration tests and stops it.
//
// The daemon listens on 127.0.0.1:0; the chosen port is read from its log
// line ("listening on 127.0.0.1:PORT"), so no polling or sleeping is needed.
#ifndef TENSORD_TESTS_DAEMON_PROCESS_H_
#define TENSORD_TESTS_DAEMON_PROCESS_H_

#include <sys/types.h>
#include <sys/wait.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace tensord {
namespace testing {

class DaemonProcess {
 public:
  // Spawns `server/tensord` from the test's runfiles with `extra_flags`
  // (default: --insecure) and waits for it to listen.
  static absl::StatusOr<std::unique_ptr<DaemonProcess>> Start(
      std::vector<std::string> extra_flags = {"--insecure"});
  ~DaemonProcess();  // SIGKILL if still running

  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  bool alive() const;
  // Sends SIGTERM and returns the exit status (waitpid's), or -1.
  int Terminate();
  // Waits for the daemon to exit by itself; returns waitpid's status, or -1.
  int Wait();
  // Everything the daemon has logged so far.
  std::string log() const;
  // Waits until the log holds `text` (true) or `timeout` passes (false).
  bool WaitForLog(const std::string& text,
                  absl::Duration timeout = absl::Seconds(10)) const;

 private:
  // The log, appended by the thread draining the daemon's output (which
  // may outlive this object: shared).
  struct Log {
    mutable absl::Mutex mu;
    std::string text ABSL_GUARDED_BY(mu);
  };
  std::shared_ptr<Log> log_ = std::make_shared<Log>();
  pid_t pid_ = -1;
  int log_fd_ = -1;
  std::string address_;
};

// A test suite sharing one daemon, started before its first test with
// SuiteFlags() and stopped (SIGTERM, exit 0 expected) after its last.
class DaemonSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { StartDaemon(); }
  static void TearDownTestSuite() { StopDaemon(); }
  // For suites whose daemon needs other flags.
  static void StartDaemon(std::vector<std::string> flags = {"--insecure"}) {
    auto d = DaemonProcess::Start(std::move(flags));
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
  }
  static void StopDaemon() {
    if (daemon_ == nullptr) return;
    const int status = daemon_->Terminate();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "tensord did not exit 0 on SIGTERM: " << status;
    delete daemon_;
    daemon_ = nullptr;
  }
  static const std::string& address() { return daemon_->address(); }

  inline static DaemonProcess* daemon_ = nullptr;
};

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_TESTS_DAEMON_PROCESS_H_

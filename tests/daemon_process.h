// Starts the real tensord binary for integration tests and stops it.
//
// The daemon listens on 127.0.0.1:0; the chosen port is read from its log
// line ("listening on 127.0.0.1:PORT"), so no polling or sleeping is needed.
#ifndef TENSORD_TESTS_DAEMON_PROCESS_H_
#define TENSORD_TESTS_DAEMON_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

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

 private:
  pid_t pid_ = -1;
  int log_fd_ = -1;
  std::string address_;
};

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_TESTS_DAEMON_PROCESS_H_

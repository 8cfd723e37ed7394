#include "tests/daemon_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <regex>
#include <thread>

#include "absl/strings/str_cat.h"

namespace tensord {
namespace testing {
namespace {

std::string DaemonPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir && workspace) {
    return absl::StrCat(srcdir, "/", workspace, "/server/tensord");
  }
  return "bazel-bin/server/tensord";
}

}  // namespace

absl::StatusOr<std::unique_ptr<DaemonProcess>> DaemonProcess::Start(
    std::vector<std::string> extra_flags) {
  int fds[2];
  if (pipe(fds) != 0) return absl::InternalError("pipe failed");
  const std::string path = DaemonPath();
  std::vector<std::string> args = {path, "--listen=127.0.0.1:0"};
  for (auto& f : extra_flags) args.push_back(f);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    dup2(fds[1], STDERR_FILENO);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(path.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  auto daemon = std::unique_ptr<DaemonProcess>(new DaemonProcess());
  daemon->pid_ = pid;
  daemon->log_fd_ = fds[0];
  // Read the log until the listening line (blocking reads: event-driven).
  std::string log;
  const std::regex listening("listening on (\\S+) \\(");
  char buf[4096];
  while (true) {
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) {
      return absl::InternalError(
          absl::StrCat("tensord exited before listening; log:\n", log));
    }
    log.append(buf, n);
    std::smatch m;
    if (std::regex_search(log, m, listening)) {
      daemon->address_ = m[1];
      break;
    }
  }
  // Keep draining the log so the daemon never blocks on a full pipe.
  // ($TENSORD_DAEMON_LOG: appended to that file, for debugging a test.)
  const int fd = fds[0];
  const char* copy_to = std::getenv("TENSORD_DAEMON_LOG");
  FILE* copy = copy_to != nullptr ? std::fopen(copy_to, "a") : nullptr;
  if (copy != nullptr) std::fwrite(log.data(), 1, log.size(), copy);
  {
    absl::MutexLock lock(&daemon->log_->mu);
    daemon->log_->text = log;
  }
  std::thread([fd, copy, kept = daemon->log_] {
    char sink[4096];
    ssize_t n;
    while ((n = read(fd, sink, sizeof(sink))) > 0) {
      {
        absl::MutexLock lock(&kept->mu);
        kept->text.append(sink, n);
      }
      if (copy != nullptr) {
        std::fwrite(sink, 1, n, copy);
        std::fflush(copy);
      }
    }
    if (copy != nullptr) std::fclose(copy);
  }).detach();
  daemon->log_fd_ = -1;  // owned by the drain thread now
  return daemon;
}

std::string DaemonProcess::log() const {
  absl::MutexLock lock(&log_->mu);
  return log_->text;
}

bool DaemonProcess::WaitForLog(const std::string& text,
                               absl::Duration timeout) const {
  absl::MutexLock lock(&log_->mu);
  const Log* log = log_.get();
  auto logged = [log, &text]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(log->mu) {
    return log->text.find(text) != std::string::npos;
  };
  return log_->mu.AwaitWithTimeout(absl::Condition(&logged), timeout);
}

bool DaemonProcess::alive() const {
  return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0;
}

int DaemonProcess::Terminate() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

int DaemonProcess::Wait() {
  if (pid_ <= 0) return -1;
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

}  // namespace testing
}  // namespace tensord

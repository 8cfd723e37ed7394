#include "server/peer_process.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77  // Linux 6.5
#endif

namespace tensord {
namespace {

absl::Status Refused(pid_t pid, absl::string_view why) {
  return absl::PermissionDeniedError(
      absl::StrCat("process ", pid, " refused: ", why));
}

// A pidfd of the process that connected `fd`: the socket's own
// (SO_PEERPIDFD, which names exactly that process), else pidfd_open of its
// pid (older kernels; OfSocket checks the process it opened again). -1 when
// neither works.
int PeerPidfd(int fd, pid_t pid) {
  int pidfd = -1;
  socklen_t len = sizeof(pidfd);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 &&
      pidfd >= 0) {
    return pidfd;
  }
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

// Tgid and real/effective uid of `pid` from /proc/PID/status.
struct ProcStatus {
  uint64_t tgid = 0;
  uint64_t real_uid = 0;
  uint64_t effective_uid = 0;
};
bool ReadProcStatus(pid_t pid, ProcStatus* out) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  bool tgid = false, uid = false;
  while (std::getline(in, line)) {
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, "Tgid:")) {
      tgid = absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &out->tgid);
    } else if (absl::ConsumePrefix(&rest, "Uid:")) {
      std::vector<absl::string_view> ids =
          absl::StrSplit(rest, absl::ByAnyChar(" \t"), absl::SkipEmpty());
      uid = ids.size() >= 2 && absl::SimpleAtoi(ids[0], &out->real_uid) &&
            absl::SimpleAtoi(ids[1], &out->effective_uid);
    }
  }
  return tgid && uid;
}

}  // namespace

absl::StatusOr<PeerProcess> PeerProcess::OfSocket(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("SO_PEERCRED: ", std::strerror(errno)));
  }
  const uid_t mine = geteuid();
  // pid 0: the peer is in a pid namespace the daemon cannot see into.
  if (cred.pid <= 0) return Refused(cred.pid, "not in the daemon's pid space");
  if (cred.uid != mine) {
    return Refused(cred.pid, absl::StrCat("it runs as uid ", cred.uid,
                                          ", the daemon as ", mine));
  }
  // SO_PEERCRED names the connecting thread group; the daemon is one too.
  if (cred.pid == getpid()) return Refused(cred.pid, "it is the daemon");
  PeerProcess peer(cred.pid, PeerPidfd(fd, cred.pid));
  if (peer.pidfd_ < 0) return Refused(cred.pid, "no pidfd for it");
  // Checked again on the process the pidfd holds (with pidfd_open, the pid
  // may have been reused since it connected): a whole process of the
  // daemon's user, alive while /proc was read, hence the one read.
  ProcStatus status;
  if (!ReadProcStatus(cred.pid, &status) || peer.Exited()) {
    return Refused(cred.pid, "it has exited");
  }
  if (status.tgid != static_cast<uint64_t>(cred.pid) ||
      status.tgid == static_cast<uint64_t>(getpid())) {
    return Refused(cred.pid, "not a process of its own");
  }
  if (status.real_uid != mine || status.effective_uid != mine) {
    return Refused(
        cred.pid, absl::StrCat("it runs as uid ", status.real_uid, "/",
                               status.effective_uid, ", the daemon as ", mine));
  }
  return peer;
}

PeerProcess::PeerProcess(PeerProcess&& other) noexcept
    : pid_(other.pid_), pidfd_(std::exchange(other.pidfd_, -1)) {}

PeerProcess& PeerProcess::operator=(PeerProcess&& other) noexcept {
  if (this != &other) {
    if (pidfd_ >= 0) close(pidfd_);
    pid_ = other.pid_;
    pidfd_ = std::exchange(other.pidfd_, -1);
  }
  return *this;
}

PeerProcess::~PeerProcess() {
  if (pidfd_ >= 0) close(pidfd_);
}

bool PeerProcess::Exited() const {
  // A pidfd polls readable once its process has exited.
  pollfd p{pidfd_, POLLIN, 0};
  const int ready = poll(&p, 1, 0);
  return ready != 0;  // an error (a bad fd) counts as gone
}

}  // namespace tensord

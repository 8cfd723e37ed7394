// The process at the other end of a unix-domain socket, as the kernel
// reports it (SO_PEERCRED, SO_PEERPIDFD): the only source cross-memory
// attach (server/cma.h) trusts for the process it may read and write.
// Nothing a client says names a process.
//
// A PeerProcess is admitted only when the connecting process runs as the
// daemon's effective user (real and effective uid: such a process could
// ptrace the daemon anyway, so copying its memory grants it nothing) and is
// another process than the daemon (its thread group, not only its pid: a
// thread id of the daemon is not a peer). It holds a pidfd of that process,
// so that once the process exits (and its pid may name another process)
// Exited() says so and the pid is never used again.
//
// Ownership: owns the pidfd. Thread safety: immutable; Exited is
// thread-safe.
#ifndef TENSORD_SERVER_PEER_PROCESS_H_
#define TENSORD_SERVER_PEER_PROCESS_H_

#include <sys/types.h>

#include "absl/status/statusor.h"

namespace tensord {

class PeerProcess {
 public:
  // The process that connected the unix socket `fd`, or PERMISSION_DENIED
  // saying why it is refused (for the daemon's log: it names the process).
  static absl::StatusOr<PeerProcess> OfSocket(int fd);

  PeerProcess(PeerProcess&& other) noexcept;
  PeerProcess& operator=(PeerProcess&& other) noexcept;
  ~PeerProcess();

  pid_t pid() const { return pid_; }
  // True once the process has exited: its pid must not be used any more.
  bool Exited() const;

 private:
  PeerProcess(pid_t pid, int pidfd) : pid_(pid), pidfd_(pidfd) {}

  pid_t pid_ = 0;
  int pidfd_ = -1;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_PEER_PROCESS_H_

// Cross-memory attach (docs/protocol.md "Cross-memory attach"): the daemon
// copies a same-host client's Put bytes straight out of the client's memory
// (process_vm_readv) and a Get's bytes straight into it (process_vm_writev),
// so each byte is copied once, by the kernel, between the client's plain
// memory and tensor storage. The shared-memory region's slots cost two
// copies (into the region, out of it); shared buffers cost one but need
// memory the client allocated through the daemon.
//
// Who may be written: the kernel lets the daemon at a process only when it
// could ptrace it (same user, or root). That is not enough on its own: a
// remote client could name any process of the daemon's user, the daemon
// included. So a peer is accepted only when (checked once, at the first
// transfer) it is not the daemon, it runs as the daemon's effective user, and
// it holds the session region's nonce at the probe address it named in its
// Hello. The nonce is readable only by a process that mapped the region
// through /proc/DAEMON/fd, i.e. one that could already ptrace the daemon's
// user's processes: the check grants no access the peer did not have.
//
// Thread safety: thread-safe (the executor uploads, a device's completion
// thread may answer a download).
#ifndef TENSORD_SERVER_CMA_H_
#define TENSORD_SERVER_CMA_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "runtime/core/mutex.h"

namespace tensord {

class CmaPeer {
 public:
  // Hello.cma_pid and Hello.cma_probe_address; `nonce` is the session
  // region's. Nothing is checked until the first transfer.
  CmaPeer(uint64_t pid, uint64_t probe_address, std::string nonce);

  // Copies `n` bytes from `remote` in the peer into `local` (Read) or from
  // `local` to `remote` in the peer (Write). Copies of 4 MiB or more are
  // split over the intra-op pool. Errors name `what` and the range:
  // INVALID_ARGUMENT for memory the peer has not mapped (or not writable),
  // FAILED_PRECONDITION when the peer was refused or has gone.
  absl::Status Read(uint64_t remote, void* local, size_t n,
                    absl::string_view what);
  absl::Status Write(uint64_t remote, const void* local, size_t n,
                     absl::string_view what);

  uint64_t pid() const { return pid_; }

 private:
  absl::Status Verified();
  absl::Status CheckPeer() const;
  absl::Status Copy(bool write, uint64_t remote, char* local, size_t n,
                    absl::string_view what);

  const uint64_t pid_;
  const uint64_t probe_address_;
  const std::string nonce_;
  Mutex mu_;
  std::optional<absl::Status> verdict_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tensord

#endif  // TENSORD_SERVER_CMA_H_

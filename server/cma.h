// Cross-memory attach (docs/protocol.md "Cross-memory attach"): the daemon
// copies a same-host client's Put bytes straight out of the client's memory
// (process_vm_readv) and a Get's bytes straight into it (process_vm_writev),
// so each byte is copied once, by the kernel, between the client's plain
// memory and tensor storage. The shared-memory region's slots cost two
// copies (into the region, out of it); shared buffers cost one but need
// memory the client allocated through the daemon.
//
// Whose memory: only the process the kernel says is the session's client.
// Nothing a client sends names a process. Each session that may use it gets
// a ticket from the CSPRNG, sent only in its own Welcome; a client process
// binds the session to itself by connecting to the daemon's binding socket
// (server/cma_binder.h) and presenting the ticket, and the daemon takes the
// process from that connection (SO_PEERCRED/SO_PEERPIDFD; PeerProcess,
// server/peer_process.h): a whole process, not the daemon, running as the
// daemon's effective user (it could ptrace the daemon, so copying its
// memory grants it nothing). A ticket admits one binding attempt; a resume
// drops the binding and issues a new ticket (the resumer may be another
// process). Until bound, and once the bound process has exited (its pidfd
// says so: a reused pid is never written), every transfer fails with one
// fixed text that says nothing about any process: there is no oracle of
// another process's existence, owner or memory map.
//
// Thread safety: thread-safe (the executor uploads, a device's completion
// thread may answer a download, the binder binds, a resume renews).
#ifndef TENSORD_SERVER_CMA_H_
#define TENSORD_SERVER_CMA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/core/mutex.h"
#include "server/peer_process.h"

namespace tensord {

class CmaPeer {
 public:
  // An unbound peer with a fresh ticket; UNAVAILABLE when the kernel's
  // CSPRNG does not answer.
  static absl::StatusOr<std::shared_ptr<CmaPeer>> Create();

  // Welcome.cma_ticket: empty once a binding was tried with it.
  std::string ticket() const ABSL_LOCKS_EXCLUDED(mu_);
  // A resume: forgets the bound process and issues a new ticket (none if
  // the CSPRNG fails: the session then cannot bind again).
  void Renew() ABSL_LOCKS_EXCLUDED(mu_);
  // Whether `ticket` is the current ticket (constant time).
  bool HoldsTicket(absl::string_view ticket) const ABSL_LOCKS_EXCLUDED(mu_);
  // Binds `peer` (PeerProcess::OfSocket of the connection that presented
  // `ticket`) if `ticket` is current; the ticket is used up either way.
  // Returns why not (for the daemon's log, never for a client).
  absl::Status Bind(absl::string_view ticket, absl::StatusOr<PeerProcess> peer)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Whether a live process is bound.
  bool bound() const ABSL_LOCKS_EXCLUDED(mu_);

  // Copies `n` bytes from `remote` in the bound process into `local` (Read)
  // or from `local` to `remote` in it (Write). Copies of 4 MiB or more are
  // split over the intra-op pool. Errors start with `what`:
  // FAILED_PRECONDITION with kNotBoundText when no live process is bound;
  // INVALID_ARGUMENT naming the range for memory the client has not mapped
  // (or not writable); FAILED_PRECONDITION for other copy failures.
  absl::Status Read(uint64_t remote, void* local, size_t n,
                    absl::string_view what);
  absl::Status Write(uint64_t remote, const void* local, size_t n,
                     absl::string_view what);

  // The one refusal text of an unbound session (after "what: ").
  static constexpr char kNotBoundText[] =
      "cross-memory attach is not bound for this session (a client process "
      "on the daemon's host, running as the daemon's user, binds it with "
      "Welcome.cma_ticket at Welcome.cma_socket; a resume or the client's "
      "exit unbinds it; docs/protocol.md \"Cross-memory attach\")";

 private:
  explicit CmaPeer(std::string ticket) : ticket_(std::move(ticket)) {}
  // The bound process if it is alive; forgets one that has exited.
  std::shared_ptr<const PeerProcess> Live() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Copy(bool write, uint64_t remote, char* local, size_t n,
                    absl::string_view what);

  mutable Mutex mu_;
  std::string ticket_ ABSL_GUARDED_BY(mu_);
  // Shared with copies under way, which a Renew does not wait for.
  std::shared_ptr<const PeerProcess> bound_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tensord

#endif  // TENSORD_SERVER_CMA_H_

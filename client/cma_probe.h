// Whether a C++ client session may use cross-memory attach
// (docs/protocol.md "Cross-memory attach"; the daemon's side is
// server/cma.h): the binding of the session to this process (through
// Welcome.cma_socket with Welcome.cma_ticket: the daemon learns the process
// from the kernel, proto/cma_bind.h), done at every Welcome, and the outcome
// of the one probe transfer that decides (tried once, by the first transfer
// big enough for the path; client/local_transport.cc).
//
// Ownership: a member of LocalTransport.
// Thread safety: Bind runs when the transport is made; Rebind
// on the reader thread during a resume, while Usable may run (so the
// binding is an atomic, never under mu(): a probe holding mu() waits for
// the reader). Usable is thread-safe. Lock order (client/transport.h): Usable
// runs the probe holding mu(), which is taken before LocalTransport's slot
// lock and the Session's locks (the probe transfers through the session).
#ifndef TENSORD_CLIENT_CMA_PROBE_H_
#define TENSORD_CLIENT_CMA_PROBE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "proto/tensord.pb.h"
#include "runtime/core/mutex.h"

namespace tensord {
inline namespace client {
namespace internal {

class CmaProbe {
 public:
  // From this size an upload from, or a download into, plain memory goes by
  // cross-memory attach when it works (below it the Put's wait for its Ack
  // costs more than the copy it saves).
  static constexpr uint64_t kMinBytes = 1 << 20;

  // Binds the session to this process when the daemon offers it
  // (`welcome`.cma) and `wanted`; remembers this process (a forked child
  // must not use the path). Call once the region is mapped.
  void Bind(bool wanted, const v1::Welcome& welcome);
  // A resumed session's daemon dropped the binding: binds again with the
  // resumed Welcome's ticket, if the session had bound. A refusal turns
  // the path off.
  void Rebind(const v1::Welcome& welcome);

  // True when transfers may go by cross-memory attach: bound (and still, as
  // far as this process knows), in the process that bound it (not a forked
  // child: the daemon would read and write the parent), `allowed`
  // (Welcome.cma, with a region mapped) and `probe` returned true. `probe`
  // runs at most once, holding mu(); its outcome stands for the session.
  bool Usable(bool allowed, absl::FunctionRef<bool()> probe)
      ABSL_LOCKS_EXCLUDED(mu_);

  Mutex* mu() ABSL_LOCK_RETURNED(mu_) { return &mu_; }

 private:
  enum class State { kUnknown, kWorks, kOff };
  // How long the daemon may take to answer a binding.
  static constexpr int kBindTimeoutMs = 2000;

  uint64_t pid_ = 0;  // the process that bound (0: never bound)
  std::atomic<bool> bound_{false};

  Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kUnknown;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_CMA_PROBE_H_

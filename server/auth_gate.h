// What the daemon's gRPC services share about callers that have not
// authenticated: the Session streams waiting for their Hello (Note
// [Unauthenticated streams]) and every failed authentication, on the
// session stream or the Admin service (Note [Failed authentications]).
// No grpcpp here: peers are gRPC's peer strings ("ipv4:10.0.0.1:5555").
//
// Ownership: owns the failures' table and the timer thread that serves
// Hello deadlines and held-back refusals. Thread-safe.
#ifndef TENSORD_SERVER_AUTH_GATE_H_
#define TENSORD_SERVER_AUTH_GATE_H_

#include <functional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "runtime/core/mutex.h"
#include "server/auth_failures.h"
#include "server/delayed_calls.h"

namespace tensord {

// Note [Unauthenticated streams]: a stream holds gRPC and daemon resources
// before its Hello is checked, so it gets `hello_timeout` to send one
// (DEADLINE_EXCEEDED after), and at most `max_unauthenticated` streams may
// be waiting for theirs or for their refusal at once, at most
// `max_unauthenticated_per_host` of them from one host (the peer address
// without its port), so that one host cannot take every slot
// (RESOURCE_EXHAUSTED beyond either). All local clients of a `unix:` or
// loopback listener are one host: the per-host cap guards against remote
// hosts, the deadline against local ones. A wrong token's refusal is held
// back (Note [Failed authentications]) while the stream still counts.
struct StreamGuards {
  absl::Duration hello_timeout = absl::Seconds(10);
  int max_unauthenticated = 256;
  int max_unauthenticated_per_host = 32;
};

class AuthGate {
 public:
  explicit AuthGate(StreamGuards guards = StreamGuards(),
                    AuthFailures::Options failures = AuthFailures::Options())
      : guards_(guards), failures_(failures) {}

  // Counts a new stream from `peer` in; RESOURCE_EXHAUSTED naming the cap
  // that is full (and nothing counted) otherwise.
  absl::Status Admit(absl::string_view peer);
  // Counts a stream Admit let in out again.
  void Leave(absl::string_view peer);

  // Note [Failed authentications]: records a failure of `what` (e.g.
  // "authentication", "Admin authentication") from `peer` with `refusal`,
  // logs it (rate limited) and runs `refuse` on the timer thread after the
  // peer's delay. `refuse` must be short and must not call back into the
  // gate.
  void RefuseLater(absl::string_view what, absl::string_view peer,
                   const absl::Status& refusal, std::function<void()> refuse);

  const StreamGuards& guards() const { return guards_; }
  DelayedCalls& timers() { return timers_; }
  size_t waiting() const;  // streams counted in now

 private:
  const StreamGuards guards_;
  AuthFailures failures_;
  mutable Mutex mu_;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  // Streams counted in per host; a host leaves the map at zero, so it holds
  // at most max_unauthenticated entries.
  absl::flat_hash_map<std::string, int> per_host_ ABSL_GUARDED_BY(mu_);
  DelayedCalls timers_;  // last: its calls may use what is above
};

}  // namespace tensord

#endif  // TENSORD_SERVER_AUTH_GATE_H_

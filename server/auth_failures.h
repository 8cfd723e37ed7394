// Note [Failed authentications]: a wrong token must cost its sender, and be
// seen by the operator without flooding the log. Each failure is counted per
// peer host (the port dropped: a new connection is a new port); the refusal
// is held back for a delay that doubles with the host's recent failures, up
// to a bound, and forgets them after a quiet while. The table is bounded,
// so an attacker with many addresses cannot grow it. Log lines are rate
// limited, the suppressed ones counted in the next line. The delay is
// served by the gRPC adapter on a timer (the stream, counted among the
// unauthenticated ones, waits; no thread does). Thread-safe.
#ifndef TENSORD_SERVER_AUTH_FAILURES_H_
#define TENSORD_SERVER_AUTH_FAILURES_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "runtime/core/mutex.h"
#include "server/log_rate_limit.h"

namespace tensord {

class AuthFailures {
 public:
  struct Options {
    absl::Duration base_delay = absl::Milliseconds(100);
    absl::Duration max_delay = absl::Seconds(5);
    absl::Duration forget_after = absl::Minutes(10);
    size_t max_peers = 4096;
    int log_lines_per_minute = 10;
  };
  struct Verdict {
    absl::Duration delay;    // hold the refusal back this long
    bool log = false;        // log this failure
    int64_t suppressed = 0;  // failures not logged since the last line
  };

  AuthFailures() : AuthFailures(Options()) {}
  explicit AuthFailures(Options options)
      : options_(options), log_(options.log_lines_per_minute) {}

  // Records a failed authentication from `peer` (a gRPC peer string).
  Verdict Record(absl::string_view peer, absl::Time now = absl::Now());
  // "ipv4:10.0.0.1:5555" -> "ipv4:10.0.0.1"; "ipv6:[::1]:5" -> "ipv6:[::1]";
  // anything else (unix:...) as is.
  static std::string PeerHost(absl::string_view peer);
  size_t peers() const;

 private:
  struct Entry {
    int failures = 0;
    absl::Time last;
  };
  void MakeRoom(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, Entry> peers_ ABSL_GUARDED_BY(mu_);
  LogRateLimit log_;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_AUTH_FAILURES_H_

// Note [Daemon counters]: what the daemon counts on its hot paths for
// operators (Prometheus, server/metrics_collector.h; tensorctl users). Every
// count is a relaxed atomic add, made once per batch (ops, commands, latency:
// RunBatch's end), once per queued batch (queue depth), once per transfer
// (bytes per path) or once per failure (errors, auth): never a lock, never
// per op. Readers (a scrape, an Admin call) see each counter on its own, not
// a consistent cut; each only grows, so rates stay right. Gauges (memory,
// sessions, queue lengths) are not counted here: the collector reads them
// from the allocators and sessions at scrape time.
//
// Labels are bounded by the daemon (Note [Metric labels]): users come from
// the tokens file, codes and paths are enums here. Thread-safe.
#ifndef TENSORD_SERVER_DAEMON_COUNTERS_H_
#define TENSORD_SERVER_DAEMON_COUNTERS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "runtime/core/mutex.h"

namespace tensord {

// A histogram of fixed upper bounds (in the caller's integer unit) kept in
// relaxed atomics. Observe is lock-free; Read is a snapshot of each bucket.
class AtomicHistogram {
 public:
  // `bounds`: ascending upper bounds; values above the last go to +Inf.
  explicit AtomicHistogram(std::vector<uint64_t> bounds);

  // Adds `weight` observations of `value`.
  void Observe(uint64_t value, uint64_t weight = 1);

  struct Snapshot {
    std::vector<uint64_t> bounds;
    std::vector<uint64_t> counts;  // per bucket (not cumulative); +Inf last
    uint64_t sum = 0;              // of value × weight
    uint64_t count = 0;            // of weights
  };
  Snapshot Read() const;

 private:
  const std::vector<uint64_t> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> count_{0};
};

// One user's counters. Sessions keep a pointer to their user's (stable for
// the daemon's life), so counting needs no lookup.
struct UserCounters {
  std::atomic<uint64_t> ops{0};  // ops run (Call, packed entries, backward)
  std::atomic<uint64_t> commands{0};  // wire commands applied
  std::atomic<uint64_t> batches{0};
  // Admin calls with the user's token refused (not an admin).
  std::atomic<uint64_t> auth_failures{0};
  // Ops its clients ran on their own CPU (Note [Client fallbacks]).
  std::atomic<uint64_t> fallbacks{0};
};

// Where a transfer's bytes moved (docs/protocol.md): the gRPC stream, the
// session's shared-memory region or a shared buffer, cross-memory attach, the
// bulk socket.
enum class TransferPath : int { kStream = 0, kShm, kCma, kBulk, kNumPaths };
enum class TransferDirection : int { kUpload = 0, kDownload, kNumDirections };
const char* TransferPathName(TransferPath path);
const char* TransferDirectionName(TransferDirection direction);

// Why an authentication failed: no user has the token (Hello or Admin), or
// a user's token asked for Admin without admin rights.
enum class AuthFailure : int { kUnknownToken = 0, kNotAdmin, kNumReasons };
const char* AuthFailureName(AuthFailure reason);

class DaemonCounters {
 public:
  // Bucket bounds: command latency in microseconds (10 us to 10 s) and
  // queue depth in batches (0 to the default bound of 256).
  static const std::vector<uint64_t>& LatencyBoundsUs();
  static const std::vector<uint64_t>& QueueDepthBounds();

  DaemonCounters();
  DaemonCounters(const DaemonCounters&) = delete;
  DaemonCounters& operator=(const DaemonCounters&) = delete;

  // The counters of `user` (an authenticated user's name), made on first
  // use and kept for the daemon's life.
  UserCounters* ForUser(absl::string_view user);
  // Every user's counters, by name.
  std::vector<std::pair<std::string, const UserCounters*>> Users() const;

  // One batch applied: `ops` ops and `commands` commands, `latency_us` from
  // its arrival to its Ack; each of its commands counts that latency.
  void BatchDone(UserCounters* user, uint64_t ops, uint64_t commands,
                 uint64_t latency_us);
  // A batch queued behind `depth` - 1 others.
  void Queued(size_t depth) { queue_depth_.Observe(depth); }
  void CountError(absl::StatusCode code);
  void CountTransfer(TransferPath path, TransferDirection direction,
                     uint64_t bytes);
  // `user`: null for kUnknownToken.
  void CountAuthFailure(AuthFailure reason, UserCounters* user);

  uint64_t errors(absl::StatusCode code) const;
  uint64_t transfer_bytes(TransferPath path, TransferDirection direction) const;
  uint64_t auth_failures(AuthFailure reason) const;
  AtomicHistogram::Snapshot latency() const { return latency_us_.Read(); }
  AtomicHistogram::Snapshot queue_depth() const { return queue_depth_.Read(); }

  // absl::StatusCode values run 0..16.
  static constexpr int kNumCodes = 17;

 private:
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<UserCounters>> users_
      ABSL_GUARDED_BY(mu_);
  std::array<std::atomic<uint64_t>, kNumCodes> errors_{};
  std::array<std::atomic<uint64_t>,
             static_cast<int>(TransferPath::kNumPaths) *
                 static_cast<int>(TransferDirection::kNumDirections)>
      transfer_bytes_{};
  std::array<std::atomic<uint64_t>, static_cast<int>(AuthFailure::kNumReasons)>
      auth_failures_{};
  AtomicHistogram latency_us_;
  AtomicHistogram queue_depth_;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_DAEMON_COUNTERS_H_

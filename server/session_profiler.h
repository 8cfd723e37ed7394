// The per-session op profiler behind SetOptions.profile, GetProfile and
// Admin.ProfileSession (`tensorctl profile`).
//
// While enabled, the executor records one OpRecord per Call/Backward: op,
// device, start and wall time, the phases (Note [Op phases] in
// runtime/ops/op_def.h: wait in the queue, decode, infer, alloc, kernel),
// bytes held by the outputs and the call site. At most kMaxRecords, and
// kMaxRecordBytes of them on the wire, are kept (so that GetProfile's reply
// fits the daemon's send limit, kMaxFrameBytes, and a session's records
// hold a few MiB at most: Note [Wire limits] in server/wire_limits.h);
// later ones are counted as dropped. The client's fallbacks reported while
// it is enabled are counted too (Note [Client fallbacks],
// server/fallback_counts.h), per op name.
//
// Thread-safe: the executor records, the client (through its own commands)
// or an administrator (from an Admin RPC thread) enables and fetches. Both
// share one switch and one record list.
#ifndef TENSORD_SERVER_SESSION_PROFILER_H_
#define TENSORD_SERVER_SESSION_PROFILER_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/tensord.pb.h"
#include "runtime/core/mutex.h"
#include "server/fallback_counts.h"

namespace tensord {

class OpProfiler {
 public:
  static constexpr size_t kMaxRecords = 1 << 18;
  static constexpr size_t kMaxRecordBytes = 4 << 20;

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // Turning it on (from off) restarts the clock that start_ns counts from.
  void SetEnabled(bool on);
  // PhaseClockNs() of the epoch start_ns counts from.
  uint64_t epoch_ns() const { return epoch_ns_.load(); }
  // Which on/off period this is: an op that started in one and ends after
  // profiling was switched (a STOP racing with a running op) is not kept.
  uint64_t generation() const { return generation_.load(); }
  void Record(v1::OpRecord record, uint64_t generation);
  // Counts a client fallback while enabled (ignored while off).
  void RecordFallback(absl::string_view op, uint64_t count);
  // Moves (clear) or copies the records and fallbacks into `out`.
  void Fill(bool clear, v1::Profile* out);

 private:
  std::atomic<bool> enabled_{false};
  std::atomic<uint64_t> epoch_ns_{0};
  std::atomic<uint64_t> generation_{0};
  Mutex mu_;
  std::vector<v1::OpRecord> records_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;  // records_' wire size
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  FallbackCounts fallbacks_;  // thread-safe itself
};

}  // namespace tensord

#endif  // TENSORD_SERVER_SESSION_PROFILER_H_

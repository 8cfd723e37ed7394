// The per-session op profiler behind SetOptions.profile and GetProfile.
//
// While enabled, the executor records one OpRecord per Call/Backward: op,
// device, start and wall time (on CPU the kernel runs on the executor, so the
// wall time covers decoding, shape inference, allocation and the kernel; on
// CUDA it ends at the launch), bytes held by the outputs and the call site.
// At most kMaxRecords are kept; later ones are counted as dropped.
//
// Thread-compatible: used by the session's executor only.
#ifndef TENSORD_SERVER_SESSION_PROFILER_H_
#define TENSORD_SERVER_SESSION_PROFILER_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "proto/tensord.pb.h"

namespace tensord {

class OpProfiler {
 public:
  static constexpr size_t kMaxRecords = 1 << 18;

  bool enabled() const { return enabled_; }
  // Turning it on (from off) restarts the clock that start_ns counts from.
  void SetEnabled(bool on);
  // Nanoseconds since profiling was enabled.
  uint64_t Now() const;
  void Record(v1::OpRecord record);
  // Moves (clear) or copies the records into `out`.
  void Fill(bool clear, v1::Profile* out);

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_ = false;
  Clock::time_point epoch_ = Clock::now();
  std::vector<v1::OpRecord> records_;
  uint64_t dropped_ = 0;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_SESSION_PROFILER_H_

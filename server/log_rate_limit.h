// Note [Rate-limited logs]: a line the daemon logs for something a stranger
// can make happen at will (a wrong token, a refused binding) must not let
// that stranger flood the log or the disk under it. Such lines go through a
// LogRateLimit: at most N a minute, and the first line after a quiet spell
// says how many were left out meanwhile. Thread-safe.
#ifndef TENSORD_SERVER_LOG_RATE_LIMIT_H_
#define TENSORD_SERVER_LOG_RATE_LIMIT_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "runtime/core/mutex.h"

namespace tensord {

class LogRateLimit {
 public:
  struct Line {
    bool log = false;        // log this one
    int64_t suppressed = 0;  // lines left out since the last one logged
    // "" or "; N more not logged", to append to the line.
    std::string SuppressedNote(const char* what = "lines") const;
  };

  explicit LogRateLimit(int lines_per_minute)
      : lines_per_minute_(lines_per_minute) {}

  // Whether the line about an event at `now` may be logged.
  Line Allow(absl::Time now = absl::Now());

 private:
  const int lines_per_minute_;
  Mutex mu_;
  absl::Time window_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int logged_in_window_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t suppressed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_LOG_RATE_LIMIT_H_

#include "server/log_rate_limit.h"

#include "absl/strings/str_cat.h"

namespace tensord {

std::string LogRateLimit::Line::SuppressedNote(const char* what) const {
  if (suppressed == 0) return "";
  return absl::StrCat("; ", suppressed, " more ", what, " not logged");
}

LogRateLimit::Line LogRateLimit::Allow(absl::Time now) {
  MutexLock lock(&mu_);
  if (now - window_ >= absl::Minutes(1)) {
    window_ = now;
    logged_in_window_ = 0;
  }
  Line line;
  if (logged_in_window_ < lines_per_minute_) {
    ++logged_in_window_;
    line.log = true;
    line.suppressed = suppressed_;
    suppressed_ = 0;
  } else {
    ++suppressed_;
  }
  return line;
}

}  // namespace tensord

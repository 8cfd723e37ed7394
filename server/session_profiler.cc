#include "server/session_profiler.h"

namespace tensord {

void OpProfiler::SetEnabled(bool on) {
  if (on && !enabled_) epoch_ = Clock::now();
  enabled_ = on;
}

uint64_t OpProfiler::Now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() -
                                                              epoch_)
      .count();
}

void OpProfiler::Record(v1::OpRecord record) {
  if (records_.size() >= kMaxRecords) {
    ++dropped_;
    return;
  }
  records_.push_back(std::move(record));
}

void OpProfiler::Fill(bool clear, v1::Profile* out) {
  out->mutable_ops()->Reserve(static_cast<int>(records_.size()));
  for (auto& r : records_) {
    if (clear) {
      *out->add_ops() = std::move(r);
    } else {
      *out->add_ops() = r;
    }
  }
  out->set_dropped(dropped_);
  if (clear) {
    records_.clear();
    dropped_ = 0;
  }
}

}  // namespace tensord

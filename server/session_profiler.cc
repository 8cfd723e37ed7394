#include "server/session_profiler.h"

#include "runtime/ops/op_def.h"

namespace tensord {

void OpProfiler::SetEnabled(bool on) {
  MutexLock lock(&mu_);
  if (on && !enabled()) epoch_ns_.store(PhaseClockNs());
  if (on != enabled()) generation_.fetch_add(1);
  enabled_.store(on);
}

void OpProfiler::Record(v1::OpRecord record, uint64_t generation) {
  // Its size in the Profile: the field's tag and length prefix, at most 4.
  const size_t bytes = record.ByteSizeLong() + 4;
  MutexLock lock(&mu_);
  if (!enabled() || generation != generation_.load()) return;
  if (records_.size() >= kMaxRecords || bytes_ + bytes > kMaxRecordBytes) {
    ++dropped_;
    return;
  }
  bytes_ += bytes;
  records_.push_back(std::move(record));
}

void OpProfiler::RecordFallback(absl::string_view op, uint64_t count) {
  if (enabled()) fallbacks_.Add(op, count);
}

void OpProfiler::Fill(bool clear, v1::Profile* out) {
  MutexLock lock(&mu_);
  fallbacks_.AppendTo(out->mutable_fallbacks());
  if (clear) fallbacks_.Clear();
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
    bytes_ = 0;
    dropped_ = 0;
  }
}

}  // namespace tensord

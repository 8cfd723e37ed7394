#include "server/fallback_counts.h"

#include <limits>

namespace tensord {

void FallbackCounts::Add(absl::string_view op, uint64_t count) {
  if (count == 0) return;
  MutexLock lock(&mu_);
  auto it = counts_.find(op);
  if (it == counts_.end()) {
    const absl::string_view name =
        counts_.size() < kMaxNames ? op : absl::string_view(kOtherOps);
    it = counts_.find(name);
    if (it == counts_.end()) it = counts_.emplace(std::string(name), 0).first;
  }
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  it->second = it->second > kMax - count ? kMax : it->second + count;
}

std::map<std::string, uint64_t> FallbackCounts::Counts() const {
  MutexLock lock(&mu_);
  return std::map<std::string, uint64_t>(counts_.begin(), counts_.end());
}

void FallbackCounts::AppendTo(
    google::protobuf::RepeatedPtrField<v1::FallbackCount>* out) const {
  MutexLock lock(&mu_);
  for (const auto& [name, n] : counts_) {
    v1::FallbackCount* entry = out->Add();
    entry->set_op(name);
    entry->set_count(n);
  }
}

void FallbackCounts::Clear() {
  MutexLock lock(&mu_);
  counts_.clear();
}

}  // namespace tensord

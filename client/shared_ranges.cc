// A session's shared-buffer address ranges. See client/shared_ranges.h.
#include "client/shared_ranges.h"

namespace tensord {
inline namespace client {
namespace internal {

void SharedRanges::Remove(uint64_t region) {
  for (auto it = ranges_.begin(); it != ranges_.end(); ++it) {
    if (it->region == region) {
      ranges_.erase(it);
      break;
    }
  }
}

std::optional<SharedRange> SharedRanges::Find(const void* p, size_t n) const {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  for (const SharedRange& range : ranges_) {
    if (begin >= range.begin && begin <= range.end && n <= range.end - begin) {
      return range;
    }
  }
  return std::nullopt;
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

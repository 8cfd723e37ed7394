// A C++ client session's shared buffers (docs/protocol.md "Shared buffers";
// client/shared_buffer.h): memory the daemon maps too, so that a transfer
// whose bytes lie inside one is one Put or Get naming the buffer's region
// (client/local_transport.cc). Here: a new buffer as allocated, and the
// address ranges of the live ones.
//
// Thread safety: none. LocalTransport keeps its ranges under its shared_mu_.
#ifndef TENSORD_CLIENT_SHARED_RANGES_H_
#define TENSORD_CLIENT_SHARED_RANGES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "client/shm_mapping.h"

namespace tensord {
inline namespace client {
namespace internal {

// A new shared buffer: its region id on the daemon and its mapping here
// (null when the session shares no memory with the daemon).
struct SharedAllocation {
  uint64_t region = 0;
  std::unique_ptr<RegionMapping> mapping;
};

// Where a shared buffer's bytes are: [begin, end) here, at `data_offset` of
// region `region` on the daemon.
struct SharedRange {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  uint64_t region = 0;
  uint64_t data_offset = 0;
  // What Put/Get.shm_offset names for the bytes at `p`.
  uint64_t OffsetOf(const void* p) const {
    return data_offset + (reinterpret_cast<uintptr_t>(p) - begin);
  }
};

class SharedRanges {
 public:
  // A buffer was mapped (AllocateShared) / is freed (FreeShared).
  void Add(const SharedRange& range) { ranges_.push_back(range); }
  void Remove(uint64_t region);
  // The buffer holding all of [p, p + n), if any.
  std::optional<SharedRange> Find(const void* p, size_t n) const;

 private:
  std::vector<SharedRange> ranges_;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_SHARED_RANGES_H_

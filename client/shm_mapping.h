// The client's side of the same-host transfer region (docs/protocol.md
// "Shared memory"; the daemon's side is server/shm_transfer.h): maps
// Welcome.shm, checks its nonce, and splits the payload area into slots so
// that copies pipeline (the daemon copies out of one slot while the client
// fills the next).
//
// Which slots are free is the session's business (client/session_shm.cc):
// a slot the client wrote is reused only after the Put reading it was
// acknowledged, a slot the daemon wrote only after the client copied the
// answer out.
//
// Ownership: owns the mapping. Thread safety: immutable after Open; the
// slots' bytes are guarded by the session's shm_mu_.
#ifndef TENSORD_CLIENT_SHM_MAPPING_H_
#define TENSORD_CLIENT_SHM_MAPPING_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {

class ShmMapping {
 public:
  static constexpr int kMaxSlots = 4;
  static constexpr size_t kDefaultSlotBytes = size_t{32} << 20;

  // Maps `desc`, with at most kMaxSlots slots of at most `max_slot_bytes`
  // (0: kDefaultSlotBytes). Null when the region is not reachable from
  // here (another host, pid namespace or user), is too small, or its nonce
  // differs: the caller then uses the stream.
  static std::unique_ptr<ShmMapping> Open(const v1::ShmRegion& desc,
                                          size_t max_slot_bytes);
  ~ShmMapping();
  ShmMapping(const ShmMapping&) = delete;
  ShmMapping& operator=(const ShmMapping&) = delete;

  int num_slots() const { return num_slots_; }
  size_t slot_bytes() const { return slot_bytes_; }
  // Where slot `i` starts in the region (what Put/Get.shm_offset carry).
  uint64_t slot_offset(int i) const { return data_offset_ + i * slot_bytes_; }
  char* slot(int i) const { return base_ + slot_offset(i); }
  // True when `desc` (a resumed session's Welcome.shm) is this region.
  bool Matches(const v1::ShmRegion& desc) const;

 private:
  ShmMapping(char* base, size_t size, uint64_t data_offset, size_t slot_bytes,
             int num_slots, std::string path, std::string nonce);

  char* const base_;
  const size_t size_;
  const uint64_t data_offset_;
  const size_t slot_bytes_;
  const int num_slots_;
  const std::string path_;
  const std::string nonce_;
};

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_SHM_MAPPING_H_

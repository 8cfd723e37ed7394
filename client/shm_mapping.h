// The client's side of the daemon's shared-memory regions (docs/protocol.md
// "Shared memory"; the daemon's side is server/shm_transfer.h).
//
// RegionMapping maps one region (Welcome.shm, or a shared buffer's
// SharedBuffer.shm) and checks its nonce; ShmMapping is the session's
// region: its nonce page and mailbox (no payload; the command ring, which
// only Python uses, after them).
//
// Ownership: each owns its mapping. Thread safety: immutable after Open;
// a shared buffer's bytes are guarded by its user.
#ifndef TENSORD_CLIENT_SHM_MAPPING_H_
#define TENSORD_CLIENT_SHM_MAPPING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "proto/mailbox.h"
#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {

class RegionMapping {
 public:
  // Maps `desc` read-write. Null when the region is not reachable from here
  // (another host, pid namespace or user), is malformed, or its nonce
  // differs. `populate`: every page is mapped now (MAP_POPULATE), so copies
  // into or out of it take no page faults.
  static std::unique_ptr<RegionMapping> Map(const v1::ShmRegion& desc,
                                            bool populate);
  ~RegionMapping();
  RegionMapping(const RegionMapping&) = delete;
  RegionMapping& operator=(const RegionMapping&) = delete;

  char* base() const { return base_; }
  size_t size() const { return size_; }
  uint64_t data_offset() const { return data_offset_; }
  // True when `desc` (a resumed session's Welcome.shm) is this region.
  bool Matches(const v1::ShmRegion& desc) const;

 private:
  RegionMapping(char* base, const v1::ShmRegion& desc);

  char* const base_;
  const size_t size_;
  const uint64_t data_offset_;
  const std::string path_;
  const std::string nonce_;
};

class ShmMapping {
 public:
  // Maps `desc`. Null when RegionMapping::Map is: the caller then uses the
  // remote transport.
  static std::unique_ptr<ShmMapping> Open(const v1::ShmRegion& desc);

  bool Matches(const v1::ShmRegion& desc) const {
    return region_->Matches(desc);
  }
  // The mailbox in the region's first page (proto/mailbox.h), when the
  // region has one (its payload starts a page in or later).
  bool has_mailbox() const {
    return region_->data_offset() >= mailbox::kPageBytes;
  }
  std::atomic<uint32_t>* mailbox_word() const {
    return mailbox::Word(region_->base());
  }
  // The daemon's announcement of the answer to `request_id`, parsed into
  // `out`; false when the mailbox holds another one or it does not parse.
  bool ReadAnnouncement(uint64_t request_id, v1::Data* out) const;

 private:
  explicit ShmMapping(std::unique_ptr<RegionMapping> region);

  const std::unique_ptr<RegionMapping> region_;
};

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_SHM_MAPPING_H_

// A session's shared host buffers (docs/protocol.md "Shared buffers"): the
// analogue of CUDA pinned memory for a client on the daemon's host. Each one
// is a ShmRegion (server/shm_transfer.h) of its own, created populated, that
// the client maps; Put/Get name it by a session-scoped region id, so bytes
// move once, between the buffer and tensor storage.
//
// Limits: a buffer's bytes count against the quota of the session's account
// on the cpu allocator (CachingAllocator::ChargeExternal) while it lives;
// a session holds at most kMaxSharedBuffers buffers (each keeps a file
// descriptor open) and at most `max_bytes` in all (tensord
// --shared_buffer_bytes; 0 turns shared buffers off).
//
// Ownership: shares the regions with the copies that use them: Free, Clear
// or the destructor (session end) return a buffer's bytes to the quota at
// once, and its mapping goes when the last copy holding it (a device
// download still writing into it, Note [Async downloads]) is done.
// Thread safety: thread-compatible, the session's executor uses it; only
// usage() is thread-safe (Admin reads it while the executor runs).
#ifndef TENSORD_SERVER_SHARED_BUFFERS_H_
#define TENSORD_SERVER_SHARED_BUFFERS_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "proto/tensord.pb.h"
#include "runtime/core/mutex.h"
#include "runtime/memory/caching_allocator.h"
#include "server/shm_transfer.h"

namespace tensord {

inline constexpr size_t kMaxSharedBuffers = 64;

// What a session's shared buffers hold: Admin's SessionInfo.shared_buffers
// and shared_buffer_bytes, summed into MemoryStatsResponse.shared_buffers.
struct SharedBufferUsage {
  size_t count = 0;
  size_t bytes = 0;  // as asked by the client: what the quota is charged
};

class SharedBuffers {
 public:
  // `quota` (the cpu allocator; null: no quota) is charged for `session`.
  SharedBuffers(uint64_t session, CachingAllocator* quota, size_t max_bytes);
  ~SharedBuffers();
  SharedBuffers(const SharedBuffers&) = delete;
  SharedBuffers& operator=(const SharedBuffers&) = delete;

  // A new buffer of `bytes` usable bytes (at Describe().data_offset):
  // INVALID_ARGUMENT for 0 bytes, FAILED_PRECONDITION when shared buffers
  // are turned off,
  // RESOURCE_EXHAUSTED over the session's cap, count or quota, or when the
  // host has no memory for it. Fills the reply's region id and mapping.
  absl::Status Allocate(uint64_t bytes, v1::SharedBuffer* reply);
  // Unmaps buffer `id` and returns its bytes; unknown ids are ignored.
  void Free(uint64_t id);
  void Clear();
  // Buffer `id` (non-zero): INVALID_ARGUMENT naming `what` and the id when
  // the session has no such buffer (never allocated, or freed).
  absl::StatusOr<std::shared_ptr<const ShmRegion>> Find(
      uint64_t id, absl::string_view what) const;

  // Thread-safe; count and bytes are of one instant.
  SharedBufferUsage usage() const;

 private:
  struct Buffer {
    std::shared_ptr<const ShmRegion> region;
    uint64_t bytes = 0;    // what the client asked for
    uint64_t account = 0;  // charged to (CachingAllocator::ChargeExternal)
  };
  void Uncharge(const Buffer& buffer);

  const uint64_t session_;
  CachingAllocator* const quota_;
  const size_t max_bytes_;
  absl::flat_hash_map<uint64_t, Buffer> buffers_;
  uint64_t next_id_ = 1;
  mutable Mutex usage_mu_;  // only a reader in another thread needs it
  SharedBufferUsage usage_ ABSL_GUARDED_BY(usage_mu_);
};

}  // namespace tensord

#endif  // TENSORD_SERVER_SHARED_BUFFERS_H_

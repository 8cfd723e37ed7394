// The allocator contract that every tensor's storage goes through.
//
// One Allocator per device. Implementations are thread-safe: sessions run on
// their own executor threads and allocate concurrently. Ownership: a pointer
// returned by Allocate is owned by the caller until it passes it back to Free
// on the same allocator (Storage does this in its destructor).
#ifndef TENSORD_RUNTIME_MEMORY_ALLOCATOR_H_
#define TENSORD_RUNTIME_MEMORY_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/core/strided.h"

namespace tensord {

// Who asks, and on which stream the memory will be used. Session 0 is the
// daemon itself (e.g. staging buffers). `site` is the client call site of
// the op allocating, for the memory history (Note [Memory history]): it
// points at the session's interned text (Note [Site ids]), valid for the
// Allocate call only; the history shares the text, never copies it.
struct AllocContext {
  uint64_t session = 0;
  StreamHandle stream = nullptr;
  const std::shared_ptr<const std::string>* site = nullptr;
};

class Allocator {
 public:
  virtual ~Allocator() = default;

  // At least `bytes` bytes, aligned to 64 bytes (CPU) or 512 bytes (CUDA).
  // bytes == 0 returns a valid, unique, non-null pointer. Out of memory or
  // over the session's quota: RESOURCE_EXHAUSTED with the numbers.
  virtual absl::StatusOr<void*> Allocate(size_t bytes,
                                         const AllocContext& ctx) = 0;

  // Returns memory from Allocate. Never fails; nullptr is ignored.
  virtual void Free(void* ptr) = 0;

  // Bytes currently allocated (not cached) on behalf of `session`.
  virtual int64_t SessionBytes(uint64_t session) const = 0;

  // Releases cached, unused memory back to the backend; returns bytes freed.
  virtual int64_t EmptyCache() = 0;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_MEMORY_ALLOCATOR_H_

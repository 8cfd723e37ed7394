// The narrow interface between the caching allocator and a device's raw
// memory: a handful of virtuals, so that all of the caching logic is tested
// on any machine (host and capacity-limited backends) and the CUDA backends
// stay a thin translation of cudaMalloc/cudaFree/cudaEvent*.
//
// Ownership: the backend owns nothing it hands out; a pointer from Malloc is
// owned by the caller until it passes it back to Free with the same size.
// Events from RecordEvent are owned by the caller until DestroyEvent.
//
// Thread safety: the CachingAllocator calls a backend while holding its own
// mutex, except Zero, which it calls after dropping the lock (on disjoint
// memory, possibly from several threads at once). So a backend needs no
// locking beyond a thread-safe Zero. A backend whose test hooks are called
// from other threads (LimitedBackend) locks internally.
#ifndef TENSORD_RUNTIME_MEMORY_BACKEND_H_
#define TENSORD_RUNTIME_MEMORY_BACKEND_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/core/strided.h"

namespace tensord {

// An opaque completion marker recorded on a stream. nullptr is a valid event
// that is always complete (what synchronous CPU streams return).
using EventHandle = void*;

class Backend {
 public:
  virtual ~Backend() = default;

  // The device this backend serves, e.g. "cpu", "cuda:0", "cuda_host".
  virtual std::string DeviceName() const = 0;

  // `bytes` (> 0) of zero-filled memory aligned to at least 512 bytes.
  // Returning zeroed memory is part of the contract: the allocator relies on
  // it to scrub only memory that has had a previous tenant (see Note [Scrub]
  // in caching_allocator.cc). Out of device memory: RESOURCE_EXHAUSTED; any
  // other code is a device error that the allocator passes through.
  virtual absl::StatusOr<void*> Malloc(size_t bytes) = 0;

  // Returns memory from Malloc; `bytes` is the size passed to Malloc.
  virtual void Free(void* ptr, size_t bytes) = 0;

  // Total bytes the device can hold (for messages and statistics).
  virtual size_t Capacity() const = 0;

  // Zeroes [ptr, ptr + bytes), ordered on `stream` before later work there.
  virtual absl::Status Zero(void* ptr, size_t bytes, StreamHandle stream) = 0;

  // Marks the current end of `stream`'s queue. The caller must eventually
  // pass the result to DestroyEvent.
  virtual absl::StatusOr<EventHandle> RecordEvent(StreamHandle stream) = 0;

  // Whether all work queued before `event` was recorded has finished.
  // Never blocks.
  virtual absl::StatusOr<bool> EventCompleted(EventHandle event) = 0;

  virtual void DestroyEvent(EventHandle event) = 0;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_MEMORY_BACKEND_H_

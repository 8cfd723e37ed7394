// Page-aligned host memory straight from the kernel (anonymous mmap), which
// arrives zero-filled and goes back to the OS on Free. CPU work is
// synchronous, so every event is complete the moment it is recorded.
//
// Note [Host capacity]: the kernel overcommits anonymous mappings, so a 16 GiB
// tensor on a 24 GiB machine maps at once and the daemon is OOM-killed only
// when the pages are written (a scrubbed block is written whole). Malloc
// therefore refuses (RESOURCE_EXHAUSTED, which the caching allocator answers
// by releasing its cache and retrying) what would take the bytes mapped past
// `capacity`.
//
// Thread safety: the mapped-bytes count is atomic; safe from any thread.
#ifndef TENSORD_RUNTIME_MEMORY_HOST_BACKEND_H_
#define TENSORD_RUNTIME_MEMORY_HOST_BACKEND_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "runtime/memory/backend.h"

namespace tensord {

class HostBackend : public Backend {
 public:
  // `capacity` 0 means the machine's physical memory.
  explicit HostBackend(std::string device_name = "cpu", size_t capacity = 0);

  std::string DeviceName() const override { return device_name_; }
  absl::StatusOr<void*> Malloc(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
  size_t Capacity() const override { return capacity_; }
  absl::Status Zero(void* ptr, size_t bytes, StreamHandle stream) override;
  absl::StatusOr<EventHandle> RecordEvent(StreamHandle stream) override;
  absl::StatusOr<bool> EventCompleted(EventHandle event) override;
  void DestroyEvent(EventHandle event) override {}

 private:
  const std::string device_name_;
  const size_t capacity_;
  std::atomic<size_t> mapped_{0};  // Note [Host capacity]
};

// The machine's physical memory in bytes.
size_t PhysicalMemoryBytes();

}  // namespace tensord

#endif  // TENSORD_RUNTIME_MEMORY_HOST_BACKEND_H_

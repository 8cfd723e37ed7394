// Host memory via anonymous mmap: page-aligned (so 512-byte block alignment
// holds for every block carved from a segment) and zero-filled by the kernel,
// which is what the Backend contract asks of Malloc.
#include "runtime/memory/host_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tensord {

size_t PhysicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return size_t{1} << 34;  // 16 GiB guess
  return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
}

HostBackend::HostBackend(std::string device_name, size_t capacity)
    : device_name_(std::move(device_name)),
      capacity_(capacity == 0 ? PhysicalMemoryBytes() : capacity) {}

absl::StatusOr<void*> HostBackend::Malloc(size_t bytes) {
  if (bytes == 0) return absl::InvalidArgumentError("Malloc of 0 bytes");
  // Note [Host capacity]: claim the bytes first, so that two threads cannot
  // both pass the check.
  const size_t before = mapped_.fetch_add(bytes);
  if (bytes > capacity_ || before > capacity_ - bytes) {
    mapped_.fetch_sub(bytes);
    return absl::ResourceExhaustedError(absl::StrCat(
        "allocating ", bytes, " bytes on ", device_name_, " would map ",
        before + bytes, " bytes, past its capacity of ", capacity_));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    mapped_.fetch_sub(bytes);
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap of ", bytes, " bytes on ", device_name_,
                     " failed: ", std::strerror(err)));
  }
  return p;
}

void HostBackend::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  munmap(ptr, bytes);
  mapped_.fetch_sub(bytes);
}

absl::Status HostBackend::Zero(void* ptr, size_t bytes, StreamHandle) {
  std::memset(ptr, 0, bytes);
  return absl::OkStatus();
}

absl::StatusOr<EventHandle> HostBackend::RecordEvent(StreamHandle) {
  return EventHandle{nullptr};  // CPU work is synchronous: already done.
}

absl::StatusOr<bool> HostBackend::EventCompleted(EventHandle) { return true; }

}  // namespace tensord

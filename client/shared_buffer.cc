#include "client/shared_buffer.h"

#include <sys/mman.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "client/session.h"
#include "client/shm_mapping.h"

namespace tensord {
inline namespace client {

SharedBuffer::SharedBuffer() = default;

SharedBuffer::SharedBuffer(std::shared_ptr<internal::Session> session,
                           uint64_t region,
                           std::unique_ptr<RegionMapping> mapping, size_t bytes)
    : session_(std::move(session)),
      mapping_(std::move(mapping)),
      data_(mapping_->base() + mapping_->data_offset()),
      size_(bytes),
      region_(region) {}

SharedBuffer SharedBuffer::Plain(void* memory, size_t bytes) {
  SharedBuffer buffer;
  buffer.data_ = memory;
  buffer.size_ = bytes;
  return buffer;
}

SharedBuffer::~SharedBuffer() { Reset(); }

SharedBuffer::SharedBuffer(SharedBuffer&& other) noexcept
    : session_(std::move(other.session_)),
      mapping_(std::move(other.mapping_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      region_(std::exchange(other.region_, 0)) {}

SharedBuffer& SharedBuffer::operator=(SharedBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    session_ = std::move(other.session_);
    mapping_ = std::move(other.mapping_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    region_ = std::exchange(other.region_, 0);
  }
  return *this;
}

void SharedBuffer::Reset() {
  if (region_ != 0) {
    // Unregistered first: no transfer takes the one-copy path into memory
    // that is about to go.
    session_->transport().FreeShared(region_);
    mapping_.reset();  // unmaps
  } else if (data_ != nullptr) {
    munmap(data_, size_);
  }
  session_.reset();
  data_ = nullptr;
  size_ = 0;
  region_ = 0;
}

absl::StatusOr<SharedBuffer> Client::AllocateShared(size_t bytes) {
  if (bytes == 0) {
    return absl::InvalidArgumentError("AllocateShared: 0 bytes asked");
  }
  absl::StatusOr<internal::SharedAllocation> shared =
      session_->transport().AllocateShared(bytes);
  if (!shared.ok()) return shared.status();
  if (shared->mapping != nullptr) {
    return SharedBuffer(session_, shared->region, std::move(shared->mapping),
                        bytes);
  }
  // No shared memory with this daemon: plain memory, zeroed like a
  // daemon's buffer.
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("AllocateShared: no memory for ", bytes, " bytes"));
  }
  return SharedBuffer::Plain(memory, bytes);
}

}  // namespace client
}  // namespace tensord

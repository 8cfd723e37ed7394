#include "client/shm_mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace tensord {
inline namespace client {

std::unique_ptr<ShmMapping> ShmMapping::Open(const v1::ShmRegion& desc,
                                             size_t max_slot_bytes) {
  if (desc.path().empty() || desc.nonce().empty() ||
      desc.data_offset() >= desc.size() || desc.data_offset() % 4096 != 0 ||
      desc.nonce().size() > desc.data_offset()) {
    return nullptr;
  }
  if (max_slot_bytes == 0) max_slot_bytes = kDefaultSlotBytes;
  const size_t usable = desc.size() - desc.data_offset();
  const size_t slot_bytes =
      std::min(max_slot_bytes, usable / kMaxSlots) & ~size_t{4095};
  if (slot_bytes == 0) return nullptr;
  const int fd = open(desc.path().c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return nullptr;  // another host, namespace or user
  struct stat st;
  void* base = MAP_FAILED;
  if (fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) >= desc.size()) {
    base = mmap(nullptr, desc.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                /*offset=*/0);
  }
  close(fd);
  if (base == MAP_FAILED) return nullptr;
  if (std::memcmp(base, desc.nonce().data(), desc.nonce().size()) != 0) {
    munmap(base, desc.size());  // some other process's descriptor
    return nullptr;
  }
  return std::unique_ptr<ShmMapping>(
      new ShmMapping(static_cast<char*>(base), desc.size(), desc.data_offset(),
                     slot_bytes, kMaxSlots, desc.path(), desc.nonce()));
}

ShmMapping::ShmMapping(char* base, size_t size, uint64_t data_offset,
                       size_t slot_bytes, int num_slots, std::string path,
                       std::string nonce)
    : base_(base),
      size_(size),
      data_offset_(data_offset),
      slot_bytes_(slot_bytes),
      num_slots_(num_slots),
      path_(std::move(path)),
      nonce_(std::move(nonce)) {}

ShmMapping::~ShmMapping() { munmap(base_, size_); }

bool ShmMapping::Matches(const v1::ShmRegion& desc) const {
  return desc.path() == path_ && desc.nonce() == nonce_ &&
         desc.size() == size_ && desc.data_offset() == data_offset_;
}

}  // namespace client
}  // namespace tensord

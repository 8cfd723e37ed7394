#include "client/shm_mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <utility>

namespace tensord {
inline namespace client {

std::unique_ptr<RegionMapping> RegionMapping::Map(const v1::ShmRegion& desc,
                                                  bool populate) {
  if (desc.path().empty() || desc.nonce().empty() ||
      desc.data_offset() > desc.size() || desc.data_offset() % 4096 != 0 ||
      desc.nonce().size() > desc.data_offset()) {
    return nullptr;
  }
  const int fd = open(desc.path().c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return nullptr;  // another host, namespace or user
  struct stat st;
  void* base = MAP_FAILED;
  if (fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) >= desc.size()) {
    base = mmap(nullptr, desc.size(), PROT_READ | PROT_WRITE,
                MAP_SHARED | (populate ? MAP_POPULATE : 0), fd,
                /*offset=*/0);
  }
  close(fd);
  if (base == MAP_FAILED) return nullptr;
  if (std::memcmp(base, desc.nonce().data(), desc.nonce().size()) != 0) {
    munmap(base, desc.size());  // some other process's descriptor
    return nullptr;
  }
  return std::unique_ptr<RegionMapping>(
      new RegionMapping(static_cast<char*>(base), desc));
}

RegionMapping::RegionMapping(char* base, const v1::ShmRegion& desc)
    : base_(base),
      size_(desc.size()),
      data_offset_(desc.data_offset()),
      path_(desc.path()),
      nonce_(desc.nonce()) {}

RegionMapping::~RegionMapping() { munmap(base_, size_); }

bool RegionMapping::Matches(const v1::ShmRegion& desc) const {
  return desc.path() == path_ && desc.nonce() == nonce_ &&
         desc.size() == size_ && desc.data_offset() == data_offset_;
}

std::unique_ptr<ShmMapping> ShmMapping::Open(const v1::ShmRegion& desc) {
  std::unique_ptr<RegionMapping> region =
      RegionMapping::Map(desc, /*populate=*/false);
  if (region == nullptr) return nullptr;
  return std::unique_ptr<ShmMapping>(new ShmMapping(std::move(region)));
}

bool ShmMapping::ReadAnnouncement(uint64_t request_id, v1::Data* out) const {
  const char* base = region_->base();
  uint64_t announced = 0;
  uint32_t length = 0;
  std::memcpy(&announced, base + mailbox::kRequestOffset, sizeof(announced));
  std::memcpy(&length, base + mailbox::kLengthOffset, sizeof(length));
  return announced == request_id && length <= mailbox::kCapacity &&
         out->ParseFromArray(base + mailbox::kPayloadOffset,
                             static_cast<int>(length));
}

ShmMapping::ShmMapping(std::unique_ptr<RegionMapping> region)
    : region_(std::move(region)) {}

}  // namespace client
}  // namespace tensord

#include "server/shm_transfer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "proto/command_ring.h"
#include "proto/mailbox.h"
#include "server/secure_random.h"

namespace tensord {
namespace {

// /proc/meminfo's MemAvailable in bytes (what the kernel could hand out
// without swapping), or 0 when it cannot be read.
uint64_t AvailableMemory() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "MemAvailable:")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, "kB");
    uint64_t kib = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &kib)) {
      return kib << 10;
    }
  }
  return 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShmRegion>> ShmRegion::Create(
    size_t size, bool populate, size_t ring_bytes) {
  if (ring_bytes != 0 && ((ring_bytes & (ring_bytes - 1)) != 0 ||
                          ring_bytes < command_ring::kControlBytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("command ring of ", ring_bytes,
                     " bytes: must be a power of two of at least 4096"));
  }
  if (size < BytesFor(ring_bytes)) {
    return absl::InvalidArgumentError("shared-memory region too small");
  }
  // Populated memory is taken at once: more than the host has free would
  // only swap or wake the OOM killer, so it is refused here.
  const uint64_t available = populate ? AvailableMemory() : 0;
  if (populate && available != 0 && size > available) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate a shared-memory region of ", size,
                     " bytes: the host has ", available, " bytes available"));
  }
  const int fd = memfd_create("tensord-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("memfd_create: ", std::strerror(errno)));
  }
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int err = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("sizing/sealing the region: ", std::strerror(err)));
  }
  // fallocate reports a shortage of memory as an error (ENOMEM/ENOSPC);
  // MAP_POPULATE alone would not, and later faults could not be answered.
  if (populate && fallocate(fd, 0, 0, static_cast<off_t>(size)) != 0) {
    const int err = errno;
    close(fd);
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate a shared-memory region of ", size,
                     " bytes: ", std::strerror(err)));
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                    MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, /*off=*/0);
  if (base == MAP_FAILED) {
    const int err = errno;
    close(fd);
    return absl::UnavailableError(absl::StrCat("mmap: ", std::strerror(err)));
  }
  absl::StatusOr<std::string> nonce = SecureRandomBytes(16);
  if (!nonce.ok()) {
    munmap(base, size);
    close(fd);
    return nonce.status();
  }
  std::memcpy(base, nonce->data(), nonce->size());
  return std::unique_ptr<ShmRegion>(new ShmRegion(
      fd, static_cast<char*>(base), size, *std::move(nonce), ring_bytes));
}

ShmRegion::ShmRegion(int fd, char* base, size_t size, std::string nonce,
                     size_t ring_bytes)
    : fd_(fd),
      base_(base),
      size_(size),
      nonce_(std::move(nonce)),
      ring_bytes_(ring_bytes),
      data_offset_(BytesFor(ring_bytes)) {}

size_t ShmRegion::BytesFor(size_t ring_bytes) {
  return kDataOffset +
         (ring_bytes == 0 ? 0 : command_ring::kControlBytes + ring_bytes);
}

char* ShmRegion::ring_records() const {
  return ring_bytes_ == 0 ? nullptr
                          : base_ + kDataOffset + command_ring::kControlBytes;
}

ShmRegion::~ShmRegion() {
  munmap(base_, size_);
  close(fd_);
}

v1::ShmRegion ShmRegion::Describe() const {
  v1::ShmRegion r;
  r.set_path(absl::StrCat("/proc/", getpid(), "/fd/", fd_));
  r.set_size(size_);
  r.set_nonce(nonce_);
  r.set_data_offset(data_offset_);
  if (ring_bytes_ != 0) {
    r.set_ring_offset(kDataOffset);
    r.set_ring_bytes(ring_bytes_);
  }
  return r;
}

bool ShmRegion::Announce(uint64_t request_id, const v1::Data& data) const {
  static_assert(kDataOffset == mailbox::kPageBytes);
  const size_t n = data.ByteSizeLong();
  if (n > mailbox::kCapacity) return false;
  data.SerializeWithCachedSizesToArray(
      reinterpret_cast<uint8_t*>(base_ + mailbox::kPayloadOffset));
  const uint32_t length = static_cast<uint32_t>(n);
  std::memcpy(base_ + mailbox::kRequestOffset, &request_id, sizeof(request_id));
  std::memcpy(base_ + mailbox::kLengthOffset, &length, sizeof(length));
  std::atomic<uint32_t>* word = mailbox::Word(base_);
  word->store(mailbox::WordFor(request_id), std::memory_order_release);
  mailbox::Wake(word);
  return true;
}

absl::StatusOr<char*> ShmRegion::Slice(uint64_t offset, uint64_t n,
                                       absl::string_view what) const {
  if (offset < data_offset_ || offset > size_ || n > size_ - offset) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": shared-memory range [", offset, ", ", offset,
                     " + ", n, ") is outside the region's payload area [",
                     data_offset_, ", ", size_, ")"));
  }
  return base_ + offset;
}

}  // namespace tensord

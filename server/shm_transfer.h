// Same-host shared-memory transfer (docs/protocol.md "Shared memory").
//
// A client that says Hello.shm_transfer gets a per-session region: a sealed
// memfd of the daemon (MFD_ALLOW_SEALING, then F_SEAL_SHRINK | F_SEAL_GROW |
// F_SEAL_SEAL, so no peer can truncate it under our mapping and make us take
// SIGBUS), mapped MAP_SHARED. The client opens it as /proc/PID/fd/N, which
// works only on the same host, in the same pid namespace, as the same user
// (or root); it checks the random nonce in the region's first bytes and
// otherwise falls back to the stream. The session region holds the nonce,
// the mailbox (first page) and, when asked for, the session's command ring
// (proto/command_ring.h, server/command_ring.h): no payload
// (Describe().data_offset == size). Bytes go through the session's shared
// buffers (server/shared_buffers.h): regions of the same kind with a payload
// area after the first page, created with `populate` (pages allocated and
// mapped up front, so neither side takes a page fault per 4 KiB while it
// copies, and a daemon short of memory says so at allocation instead of
// faulting later). Put/Get carry offsets into them instead of bytes; the
// daemon only bounds-checks offsets.
//
// Thread safety: a payload area is read and written by the session's
// executor only (the client writes its side between commands); the ring by
// its reader thread and the client, through its atomic words.
#ifndef TENSORD_SERVER_SHM_TRANSFER_H_
#define TENSORD_SERVER_SHM_TRANSFER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/tensord.pb.h"

namespace tensord {

class ShmRegion {
 public:
  // Bytes reserved at the start of the region for the nonce and the mailbox:
  // the payload area's start when there is no ring.
  static constexpr size_t kDataOffset = 4096;

  // A new region of `size` bytes (at least BytesFor(ring_bytes)). Its pages
  // are backed once touched, or with `populate` at once (RESOURCE_EXHAUSTED
  // when memory is short). `ring_bytes` (a power of two, or 0: none) of
  // command ring records after the first page and the ring's control page.
  static absl::StatusOr<std::unique_ptr<ShmRegion>> Create(
      size_t size, bool populate = false, size_t ring_bytes = 0);
  // The bytes before the payload area: a session region's whole size.
  static size_t BytesFor(size_t ring_bytes);
  ~ShmRegion();
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  // What Welcome.shm (or a SharedBuffer reply) tells the client.
  v1::ShmRegion Describe() const;
  size_t size() const { return size_; }
  size_t data_offset() const { return data_offset_; }
  // The command ring's control page and records (null and 0: no ring).
  char* ring_control() const {
    return ring_bytes_ == 0 ? nullptr : base_ + kDataOffset;
  }
  char* ring_records() const;
  size_t ring_bytes() const { return ring_bytes_; }

  // Writes `data`, the answer to Get `request_id`, into the mailbox of the
  // region's first page and wakes the client waiting on it
  // (proto/mailbox.h); false (nothing written) when it does not fit.
  // Writes shared memory only (const: no state of this object changes).
  bool Announce(uint64_t request_id, const v1::Data& data) const;

  // [offset, offset + n) of the payload area, or INVALID_ARGUMENT naming
  // `what` when it is outside it.
  absl::StatusOr<char*> Slice(uint64_t offset, uint64_t n,
                              absl::string_view what) const;

 private:
  ShmRegion(int fd, char* base, size_t size, std::string nonce,
            size_t ring_bytes);

  const int fd_;
  char* const base_;
  const size_t size_;
  const std::string nonce_;
  const size_t ring_bytes_;
  const size_t data_offset_;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_SHM_TRANSFER_H_

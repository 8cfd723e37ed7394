// The session region's mailbox (docs/protocol.md "Mailbox"): where the
// daemon announces the answer to a Get that asked for it (Get.notify), in
// the region's first page next to the nonce, so that a same-host client
// waiting for that answer is woken by the daemon itself (a futex on the
// shared word) instead of through gRPC's threads and its own reader.
//
// Layout, from the region's base (the page before data_offset):
//   [0, 16)    the nonce (server/shm_transfer.h)
//   [64, 68)   word: the announced request id's low 31 bits; the client may
//              store one with kMailboxLocal set to wake its own waiter
//   [72, 80)   the announced request id (64 bits)
//   [80, 84)   the length of the announcement
//   [128, 4096) the announcement: a serialized v1::Data
// The daemon writes the id, the length and the bytes, then stores the word
// (release) and wakes the futex on it. A client has at most one Get with
// `notify` outstanding per session (the mailbox holds one answer); the
// stream still carries every answer, and is what a client falls back on.
// Both sides use the word as a process-shared futex (no FUTEX_PRIVATE_FLAG).
#ifndef TENSORD_PROTO_MAILBOX_H_
#define TENSORD_PROTO_MAILBOX_H_

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tensord {
namespace mailbox {

inline constexpr size_t kWordOffset = 64;
inline constexpr size_t kRequestOffset = 72;
inline constexpr size_t kLengthOffset = 80;
inline constexpr size_t kPayloadOffset = 128;
inline constexpr size_t kPageBytes = 4096;  // ShmRegion::kDataOffset
inline constexpr size_t kCapacity = kPageBytes - kPayloadOffset;
inline constexpr uint32_t kIdMask = 0x7fffffffu;
inline constexpr uint32_t kLocal = 0x80000000u;

inline uint32_t WordFor(uint64_t request_id) {
  return static_cast<uint32_t>(request_id) & kIdMask;
}

inline std::atomic<uint32_t>* Word(char* base) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                    std::atomic<uint32_t>::is_always_lock_free,
                "the mailbox word must be a plain lock-free 32-bit word");
  return reinterpret_cast<std::atomic<uint32_t>*>(base + kWordOffset);
}

// Wakes every waiter on `word` in any process.
inline void Wake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX,
          nullptr, nullptr, 0);
}

// Sleeps while `*word` is `seen`, at most `timeout_ns` (< 0: no limit);
// returns at once when it is not, and may return spuriously: callers loop.
inline void Wait(std::atomic<uint32_t>* word, uint32_t seen,
                 int64_t timeout_ns = -1) {
  struct timespec ts = {static_cast<time_t>(timeout_ns / 1000000000),
                        static_cast<long>(timeout_ns % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen,
          timeout_ns < 0 ? nullptr : &ts, nullptr, 0);
}

}  // namespace mailbox
}  // namespace tensord

#endif  // TENSORD_PROTO_MAILBOX_H_

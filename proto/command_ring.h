// The session region's command ring (docs/protocol.md "Command ring"): where
// a same-host client writes its encoded ClientFrame{batch} frames instead of
// sending them on the gRPC stream, and a daemon thread of the session reads
// them, woken by a futex on a shared word. The stream still carries the
// Hello, every reply, and the frames too big for the ring.
//
// Layout, from ShmRegion.ring_offset (a page of control words, then
// ShmRegion.ring_bytes of records; data_offset follows the ring):
//   [0, 8)      head: bytes of records the client has published (it only
//               grows; a record's position is head modulo ring_bytes)
//   [64, 72)    tail: bytes the daemon has consumed (only grows)
//   [128, 132)  doorbell: a futex word the client bumps after publishing
//   [132, 136)  daemon_idle: 1 while the daemon sleeps on the doorbell
//   [192, 196)  space: a futex word the daemon bumps after consuming, and
//               after it queued a stream batch (stream_seq below)
//   [196, 200)  client_waiting: 1 while the client sleeps on `space`
//   [256, 264)  stream_seq: the last command seq of the last batch the daemon
//               queued from the stream
//   [320, 328)  ack_wanted: the highest command seq whose Ack the client waits
//               for (it rings the doorbell after raising it): the daemon then
//               sends the Acks it holds back (Note [Held acks],
//               server/session_outbox.h)
// A record is a u32 length, a u32 kRecordMagic, then `length` frame bytes,
// padded to 8 bytes. A record never wraps: when one does not fit before the
// ring's end, the client writes a length of kWrapMarker there (8 bytes always
// fit: records are 8-aligned) and starts it at position 0.
// Ordering with the stream (one order of batches, whichever way they come):
// the client sends a frame on the stream only once tail == head (the daemon
// has queued everything in the ring), and writes into the ring only once
// stream_seq has reached the last seq it sent on the stream.
// Both sides use the words as process-shared futexes (no FUTEX_PRIVATE_FLAG).
#ifndef TENSORD_PROTO_COMMAND_RING_H_
#define TENSORD_PROTO_COMMAND_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tensord {
namespace command_ring {

inline constexpr size_t kControlBytes = 4096;
inline constexpr size_t kHeadOffset = 0;
inline constexpr size_t kTailOffset = 64;
inline constexpr size_t kDoorbellOffset = 128;
inline constexpr size_t kDaemonIdleOffset = 132;
inline constexpr size_t kSpaceOffset = 192;
inline constexpr size_t kClientWaitingOffset = 196;
inline constexpr size_t kStreamSeqOffset = 256;
inline constexpr size_t kAckWantedOffset = 320;
inline constexpr size_t kRecordHeader = 8;
inline constexpr uint32_t kRecordMagic = 0x474e4952u;  // "RING"
inline constexpr uint32_t kWrapMarker = 0xffffffffu;

// The record bytes of a frame of `n` bytes (header and padding included).
inline constexpr uint64_t RecordBytes(uint64_t n) {
  return (kRecordHeader + n + 7) & ~uint64_t{7};
}

template <typename T>
std::atomic<T>* At(char* control, size_t offset) {
  static_assert(sizeof(std::atomic<T>) == sizeof(T) &&
                    std::atomic<T>::is_always_lock_free,
                "ring words must be plain lock-free words");
  return reinterpret_cast<std::atomic<T>*>(control + offset);
}

// The words of the control page at `control`, as the layout above places
// them.
struct Control {
  explicit Control(char* control)
      : head(At<uint64_t>(control, kHeadOffset)),
        tail(At<uint64_t>(control, kTailOffset)),
        doorbell(At<uint32_t>(control, kDoorbellOffset)),
        daemon_idle(At<uint32_t>(control, kDaemonIdleOffset)),
        space(At<uint32_t>(control, kSpaceOffset)),
        client_waiting(At<uint32_t>(control, kClientWaitingOffset)),
        stream_seq(At<uint64_t>(control, kStreamSeqOffset)),
        ack_wanted(At<uint64_t>(control, kAckWantedOffset)) {}
  std::atomic<uint64_t>* head;
  std::atomic<uint64_t>* tail;
  std::atomic<uint32_t>* doorbell;
  std::atomic<uint32_t>* daemon_idle;
  std::atomic<uint32_t>* space;
  std::atomic<uint32_t>* client_waiting;
  std::atomic<uint64_t>* stream_seq;
  std::atomic<uint64_t>* ack_wanted;
};

}  // namespace command_ring
}  // namespace tensord

#endif  // TENSORD_PROTO_COMMAND_RING_H_

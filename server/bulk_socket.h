// The bulk socket (docs/protocol.md "Bulk socket"): TCP connections (TLS
// ones when the daemon serves TLS: server/bulk_tls.h) beside a session's
// gRPC stream that carry the bytes of large Puts and Gets, so a client on
// another host (or one without a shared-memory region) moves tensor bytes
// at the speed of bare sockets instead of through HTTP/2 frames, gRPC's
// slices and the threads that hand them over (BENCHMARKS.md: about half a
// bare socket on loopback).
//
// The stream still carries every command and answer; the socket carries only
// bytes, in command order: a Put whose payload is `bulk{size: N}` is
// followed by N bytes from the client, a Data whose payload is
// `bulk{size: N}` answering a Get `into` bulk by N bytes from the daemon.
// A session's socket has up to Welcome.bulk_lanes connections ("lanes",
// proto/bulk_socket.h); a transfer striped over several moves each
// lane's span at once, lane 0 on the executor and the others on threads of
// their own. The session's executor reads and writes them itself, straight
// between the sockets and CPU tensor storage (one copy each way, by the
// kernel). Only one session's commands ever touch its socket, and the client
// sends a bulk command only once its previous one has completed, so the two
// directions never wait on each other.
//
// A client attaches each lane with the session's token (Welcome.bulk_token,
// sent over the authenticated stream): BulkListener (server/bulk_listener.h)
// reads the hello and hands the connection to that session's BulkChannel.
//
// Thread safety: BulkChannel is used by the session's executor (Read,
// Discard, Write) and by the listener (Attach) and the session's end
// (Shutdown) from other threads.
#ifndef TENSORD_SERVER_BULK_SOCKET_H_
#define TENSORD_SERVER_BULK_SOCKET_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/bulk_socket.h"
#include "runtime/core/mutex.h"
#include "server/bulk_tls.h"

namespace tensord {

// A Get{bulk} of fewer bytes is answered on the stream: a socket write and
// the client's read cost more than the frame saves.
inline constexpr size_t kBulkMinGetBytes = 1 << 20;

class BulkChannel {
 public:
  // `stall`: how long a Read or Write waits for the peer to move a single
  // byte on a lane before it gives up (the client stopped without closing).
  // `lanes`: how many connections it admits (Welcome.bulk_lanes, 1 to
  // kBulkMaxLanes).
  explicit BulkChannel(absl::Duration stall = absl::Seconds(30),
                       uint32_t lanes = 1);
  ~BulkChannel();  // closes the sockets
  BulkChannel(const BulkChannel&) = delete;
  BulkChannel& operator=(const BulkChannel&) = delete;

  uint32_t lanes_offered() const { return lanes_offered_; }

  // Takes `fd` (a connected socket) as lane `lane`; false (and `fd` closed)
  // if that lane is attached already, is not offered, or the channel was
  // shut down or broken: a token admits each lane once.
  bool Attach(int fd, uint32_t lane = 0);
  // The same for a lane's connection (a TLS one: server/bulk_tls.h); with
  // `answer`, kBulkAccepted is sent on it once attached, before any transfer
  // can use it.
  bool Attach(LaneSocket conn, uint32_t lane, bool answer);
  // Whether lane 0 is attached; how many lanes from 0 on are.
  bool attached() const;
  uint32_t lanes_attached() const;

  // Exactly `n` bytes from the peer into `dst` (Read), dropped (Discard), or
  // from `src` to the peer (Write), striped over lanes 0..lanes-1 (BulkLane;
  // 0 or 1: lane 0 alone). Errors name `what`, the lane and how far it got
  // ("put of handle 7: the bulk socket closed after 1048576 of 8388608
  // bytes"); after one the channel is broken (closed) and every later call
  // fails at once: its byte stream can no longer be matched to commands.
  // Asking for lanes that are not attached breaks it too.
  absl::Status Read(char* dst, size_t n, absl::string_view what,
                    uint32_t lanes = 1);
  absl::Status Discard(size_t n, absl::string_view what, uint32_t lanes = 1);
  absl::Status Write(const char* src, size_t n, absl::string_view what,
                     uint32_t lanes = 1);

  // Unblocks a Read or Write in progress and fails every later one (the
  // session is ending).
  void Shutdown();

 private:
  // Moves a lane's bytes: `step(lane, conn, pos, len, want)` is one Recv or
  // Send (LaneSocket's, `want` its) of at most `len` bytes at byte `pos` of
  // the transfer.
  using Step = absl::FunctionRef<ssize_t(uint32_t lane, LaneSocket& conn,
                                         uint64_t pos, size_t len,
                                         short* want)>;

  // The connections of lanes 0..lanes-1, or the error every call now gets.
  absl::StatusOr<std::vector<LaneSocket*>> Usable(absl::string_view what,
                                                uint32_t lanes);
  // Moves the n bytes over `lanes` lanes at once, each by `step` whenever
  // poll reports `events` on it, within the stall timeout.
  absl::Status Transfer(short events, size_t n, uint32_t lanes,
                        absl::string_view what, Step step);
  // One lane's span [begin, end) of an n-byte transfer.
  absl::Status MoveLane(short events, LaneSocket& conn, uint32_t lane,
                        uint32_t lanes, uint64_t begin, uint64_t end, size_t n,
                        absl::string_view what, Step step);
  // Wakes every lane's transfer (shutdown, not close: they may be in a
  // syscall on it).
  void WakeAll();
  absl::Status Break(absl::Status status);

  const absl::Duration stall_;
  const uint32_t lanes_offered_;
  mutable Mutex mu_;
  // Per lane; a closed one: not attached. Only Attach (an unattached lane)
  // and Break (no transfer in progress) replace one.
  std::vector<LaneSocket> conns_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tensord

#endif  // TENSORD_SERVER_BULK_SOCKET_H_

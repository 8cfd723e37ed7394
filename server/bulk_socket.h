// The bulk socket (docs/protocol.md "Bulk socket"): a plain TCP connection
// beside a session's gRPC stream that carries the bytes of large Puts and
// Gets, so a client on another host (or one without a shared-memory region)
// moves tensor bytes at the speed of a bare socket instead of through HTTP/2
// frames, gRPC's slices and the threads that hand them over (BENCHMARKS.md:
// about half a bare socket on loopback).
//
// The stream still carries every command and answer; the socket carries only
// bytes, in command order: a `Put{bulk_size: N}` is followed by N bytes from
// the client, a `Data{bulk_size: N}` answering a `Get{bulk}` by N bytes from
// the daemon. The session's executor reads and writes them itself, straight
// between the socket and CPU tensor storage (one copy each way, by the
// kernel). Only one session's commands ever touch its socket, and the client
// sends a bulk command only once its previous one has completed, so the
// two directions never wait on each other.
//
// A client attaches with the session's one-time token (Welcome.bulk_token,
// sent over the authenticated stream): BulkListener accepts, reads the
// 8-byte magic and the token (within 2 s; up to 64 connections at once, so
// silent ones delay no other), and hands the socket to that session's
// BulkChannel. Anything else is closed without an answer.
//
// Thread safety: BulkChannel is used by the session's executor (Read,
// Discard, Write) and by the listener (Attach) and the session's end
// (Shutdown) from other threads; BulkListener runs its own accept thread.
#ifndef TENSORD_SERVER_BULK_SOCKET_H_
#define TENSORD_SERVER_BULK_SOCKET_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/bulk_socket.h"
#include "runtime/core/mutex.h"

namespace tensord {

// A Get{bulk} of fewer bytes is answered on the stream: a socket write and
// the client's read cost more than the frame saves.
inline constexpr size_t kBulkMinGetBytes = 1 << 20;

class BulkChannel {
 public:
  // `stall`: how long a Read or Write waits for the peer to move a single
  // byte before it gives up (the client stopped without closing).
  explicit BulkChannel(absl::Duration stall = absl::Seconds(30));
  ~BulkChannel();  // closes the socket
  BulkChannel(const BulkChannel&) = delete;
  BulkChannel& operator=(const BulkChannel&) = delete;

  // Takes `fd` (a connected socket); false (and `fd` closed) if one is
  // attached already or the channel was shut down: a token works once.
  bool Attach(int fd);
  bool attached() const;

  // Exactly `n` bytes from the peer into `dst` (Read), dropped (Discard), or
  // from `src` to the peer (Write). Errors name `what` and how far it got
  // ("put of handle 7: the bulk socket closed after 1048576 of 8388608
  // bytes"); after one the channel is broken (closed) and every later call
  // fails at once: its byte stream can no longer be matched to commands.
  absl::Status Read(char* dst, size_t n, absl::string_view what);
  absl::Status Discard(size_t n, absl::string_view what);
  absl::Status Write(const char* src, size_t n, absl::string_view what);

  // Unblocks a Read or Write in progress and fails every later one (the
  // session is ending).
  void Shutdown();

 private:
  // The socket, or the error every call now gets.
  absl::StatusOr<int> Usable(absl::string_view what);
  // Moves `n` bytes by `step(fd, bytes done so far)` (a recv or send) each
  // time poll reports `events`, within the stall timeout.
  absl::Status Transfer(short events, size_t n, absl::string_view what,
                        absl::FunctionRef<ssize_t(int fd, size_t done)> step);
  absl::Status Break(absl::Status status);

  const absl::Duration stall_;
  mutable Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
};

class BulkListener {
 public:
  // The channel of the session whose token this is, or null.
  using Lookup =
      std::function<std::shared_ptr<BulkChannel>(absl::string_view token)>;

  // Listens on `host`:`port` (0: a free port) and accepts until destroyed.
  static absl::StatusOr<std::unique_ptr<BulkListener>> Start(
      const std::string& host, int port, Lookup lookup);
  ~BulkListener();  // stops accepting and joins the thread
  BulkListener(const BulkListener&) = delete;
  BulkListener& operator=(const BulkListener&) = delete;

  int port() const { return port_; }

 private:
  BulkListener(int fd, int wake_fd, int port, Lookup lookup);
  // Accepts connections and reads their hellos as their bytes arrive, up
  // to 64 at a time, each within 2 s: a silent peer delays no other.
  void AcceptLoop();
  // Attaches `fd` to the session its complete `hello` names, or closes it.
  void Admit(int fd, const char* hello);

  const int fd_;
  const int wake_fd_;  // an eventfd: the destructor's stop signal
  const int port_;
  const Lookup lookup_;
  std::thread thread_;
};

// "host" of a "host:port" or "[v6]:port" listen address; empty for unix:
// addresses and anything else that names no TCP host.
std::string TcpHostOf(absl::string_view listen);

}  // namespace tensord

#endif  // TENSORD_SERVER_BULK_SOCKET_H_

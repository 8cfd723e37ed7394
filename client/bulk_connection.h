// The client end of the bulk socket (docs/protocol.md "Bulk socket"; the
// daemon's side is server/bulk_socket.h, the hello proto/bulk_socket.h): a
// plain TCP connection beside a session's stream that carries the bytes of
// large uploads and downloads when the client has no shared-memory region.
// A transfer's command still goes on the stream; its bytes follow here, in
// command order. What a transfer sends and checks is Session's
// (client/session_bulk.cc); this class owns the connection.
//
// Ownership: a Session makes one when the daemon offered a socket
// (Welcome.bulk_port) and it has no region, and owns it; the connection owns
// its file descriptor (closed by Close or the destructor).
//
// Thread safety: the state is guarded by mu(); the *Locked methods require
// it, the others take it. A transfer holds mu() for its whole length, from
// queueing its command on the stream to its last byte here, so the socket's
// bytes follow the commands' order. Lock order (client/session.h): mu() is
// taken before the Session's enqueue_mu_ (so before its write_mu_ and mu_),
// never while one of those is held; Session's enqueue_mu_ says so
// (ABSL_ACQUIRED_AFTER). The first UsableLocked connects holding mu(),
// waiting up to ClientOptions::connect_timeout for the hello's answer.
#ifndef TENSORD_CLIENT_BULK_CONNECTION_H_
#define TENSORD_CLIENT_BULK_CONNECTION_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/options.h"
#include "runtime/core/mutex.h"

namespace tensord {
inline namespace client {
namespace internal {

class BulkConnection {
 public:
  // From this size, transfers without a region go on the bulk socket.
  static constexpr uint64_t kMinBytes = 1 << 20;

  // Whether a client with `options` asks for one (Hello.bulk):
  // ClientOptions::bulk, $TENSORD_BULK not "0", and a TCP address.
  static bool Wanted(const ClientOptions& options);

  // The daemon's offer: `port` (Welcome.bulk_port) on the host of
  // `options.address`, and `token` (Welcome.bulk_token). Connects nothing.
  BulkConnection(const ClientOptions& options, uint32_t port,
                 std::string token);
  ~BulkConnection();
  BulkConnection(const BulkConnection&) = delete;
  BulkConnection& operator=(const BulkConnection&) = delete;

  // Held by a transfer for its command and its bytes.
  Mutex* mu() ABSL_LOCK_RETURNED(mu_) { return &mu_; }

  // True while the socket works. The first call connects and sends the
  // hello (when still Wanted and the offer is well-formed); false for good
  // once that failed, the daemon refused it, a transfer failed or Close ran.
  bool UsableLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Usable() ABSL_LOCKS_EXCLUDED(mu_);

  // Moves exactly `n` bytes of the upload (Send) or download (Receive) of
  // `handle`. A short transfer closes the socket for good (DropLocked) and
  // is UNAVAILABLE, naming the handle and how far it got. Requires
  // UsableLocked.
  absl::Status SendLocked(uint64_t handle, const char* data, size_t n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReceiveLocked(uint64_t handle, char* data, size_t n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Closes the socket; it is not used again (after a failed transfer its
  // bytes can no longer be matched to commands).
  void DropLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class State { kUnknown, kWorks, kOff };

  // Wanted again at the first use ($TENSORD_BULK is read then too).
  static bool Wanted(bool enabled, const std::string& address);
  // After the `what` ("upload", "download") of `handle` moved `moved` of
  // its `n` bytes: OK when all, else UNAVAILABLE and the socket dropped.
  absl::Status CheckMovedLocked(absl::string_view what, uint64_t handle,
                                size_t moved, size_t n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const bool enabled_;         // ClientOptions::bulk
  const std::string address_;  // the session's (ClientOptions::address)
  const absl::Duration connect_timeout_;
  const uint32_t port_;
  const std::string token_;

  Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kUnknown;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_BULK_CONNECTION_H_

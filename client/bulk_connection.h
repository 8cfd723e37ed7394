// The client end of the bulk socket (docs/protocol.md "Bulk socket"; the
// daemon's side is server/bulk_socket.h, the hellos and lanes
// proto/bulk_socket.h): TCP connections ("lanes") beside a session's stream
// that carry the bytes of large uploads and downloads when the client has no
// shared-memory region; TLS connections (client/bulk_tls_client.h) when the
// session has ClientOptions::tls. A transfer's command still goes on
// the stream; its bytes follow here, in command order, striped over the
// lanes the command names, each lane's span moved at once on a thread of
// its own (lane 0 on the caller's). What a transfer sends and checks is
// RemoteTransport's (client/remote_transport.cc); this class owns the
// connections.
//
// Ownership: a RemoteTransport makes one when the daemon offered a socket
// (Welcome.bulk_port) and it has no region, and owns it; the connection owns
// its file descriptors (closed by Close or the destructor).
//
// Thread safety: the state is guarded by mu(); the *Locked methods require
// it, the others take it. A transfer holds mu() for its whole length, from
// queueing its command on the stream to its last byte here, so the socket's
// bytes follow the commands' order. Lock order (client/transport.h): mu() is
// taken before the Session's locks, never while one of those is held. The
// first UsableLocked connects holding mu(),
// each read and write of a lane's TLS handshake and hello waiting up to
// ClientOptions::connect_timeout.
#ifndef TENSORD_CLIENT_BULK_CONNECTION_H_
#define TENSORD_CLIENT_BULK_CONNECTION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/bulk_tls_client.h"
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
  // ClientOptions::bulk, $TENSORD_BULK not "0", a TCP address, and no opaque
  // ClientOptions::credentials (the lanes of a daemon serving TLS are TLS,
  // made from ClientOptions::tls; opaque credentials cannot be read back,
  // so such a session moves its bytes on the stream).
  static bool Wanted(const ClientOptions& options);

  // The daemon's offer: `port` (Welcome.bulk_port) on the host of
  // `options.address`, `token` (Welcome.bulk_token) and `lanes`
  // (Welcome.bulk_lanes; 0 is 1). Connects nothing.
  BulkConnection(const ClientOptions& options, uint32_t port, std::string token,
                 uint32_t lanes);
  ~BulkConnection();
  BulkConnection(const BulkConnection&) = delete;
  BulkConnection& operator=(const BulkConnection&) = delete;

  // Held by a transfer for its command and its bytes.
  Mutex* mu() ABSL_LOCK_RETURNED(mu_) { return &mu_; }

  // True while the socket works. The first call connects lane 0 and the
  // other lanes wanted (ClientOptions::bulk_lanes) and
  // sends their hellos (when still Wanted and the offer is well-formed);
  // false for good once lane 0 failed (its TLS handshake included), the
  // daemon refused it, a transfer failed or Close ran: the transfers then
  // take the stream. A refused later lane leaves the lanes before it.
  bool UsableLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Usable() ABSL_LOCKS_EXCLUDED(mu_);
  // How many lanes are connected (0 before the first UsableLocked).
  uint32_t lanes() ABSL_LOCKS_EXCLUDED(mu_);
  uint32_t lanes_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<uint32_t>(lanes_.size());
  }
  // Why lane 0 did not connect (e.g. "TLS handshake with tensord's bulk
  // socket at 10.0.0.2 failed: certificate verify failed: hostname
  // mismatch"); empty when it did or was not tried.
  std::string refusal() ABSL_LOCKS_EXCLUDED(mu_);

  // Moves exactly `n` bytes of the upload (Send) or download (Receive) of
  // `handle`, striped over lanes 0..lanes-1 (BulkLane; 0 or 1: lane 0
  // alone). A short transfer closes the sockets for good (DropLocked) and is
  // UNAVAILABLE, naming the handle, the lane and how far it got. Requires
  // UsableLocked and lanes <= lanes_locked().
  absl::Status SendLocked(uint64_t handle, const char* data, size_t n,
                          uint32_t lanes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReceiveLocked(uint64_t handle, char* data, size_t n,
                             uint32_t lanes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Closes the socket; it is not used again (after a failed transfer its
  // bytes can no longer be matched to commands).
  void DropLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class State { kUnknown, kWorks, kOff };

  // Wanted again at the first use ($TENSORD_BULK is read then too).
  static bool Wanted(bool enabled, const std::string& address);
  // How many lanes to open: the offer, capped by the options.
  uint32_t LanesWanted() const;
  // Connects lane `lane` (through `tls` unless null) and has its hello
  // accepted; UNAVAILABLE saying why otherwise.
  absl::StatusOr<LaneSocket> ConnectLane(uint32_t lane,
                                         const BulkTlsClient* tls) const;
  // The lanes' TLS context (null: plain TCP); false, with refusal_ set, when
  // ClientOptions::tls cannot be used.
  bool MakeTlsLocked(std::shared_ptr<const BulkTlsClient>* tls)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the n bytes over `lanes` lanes at once, `upload` or not; OK when
  // all moved, else UNAVAILABLE (naming the first lane that fell short) and
  // the sockets dropped.
  absl::Status MoveLocked(bool upload, uint64_t handle, char* data, size_t n,
                          uint32_t lanes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const bool enabled_;         // ClientOptions::bulk
  const std::string address_;  // the session's (ClientOptions::address)
  const absl::Duration connect_timeout_;
  const uint32_t port_;
  const std::string token_;
  const uint32_t lanes_offered_;
  const uint32_t lanes_option_;  // ClientOptions::bulk_lanes
  const std::optional<TlsCredentials> tls_credentials_;  // ClientOptions::tls

  Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kUnknown;
  std::vector<LaneSocket> lanes_ ABSL_GUARDED_BY(mu_);  // lane i's at i
  std::string refusal_ ABSL_GUARDED_BY(mu_);
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_BULK_CONNECTION_H_

// The bulk sockets' listener (docs/protocol.md "Bulk socket"; the channel
// each session's lanes attach to is server/bulk_socket.h, the hellos
// proto/bulk_socket.h): accepts connections on the daemon's bulk port and
// reads each one's hello (lane 0: magic and token; lane i: lane magic, token
// and the byte i) through a HelloAcceptor (server/hello_acceptor.h: 2 s each,
// 64 at once), and hands the socket to the BulkChannel of the session whose
// token it names, answering kBulkAccepted. Anything else is closed without
// an answer. With TLS (server/bulk_tls.h: the daemon serves TLS) each
// connection's handshake runs in the acceptor too, non-blocking and within
// the hello's 2 s, and the hello and answer travel inside it; a connection
// whose handshake fails or stalls is closed and delays no other.
//
// Thread safety: its acceptor runs its own thread; the lookup is called on it.
#ifndef TENSORD_SERVER_BULK_LISTENER_H_
#define TENSORD_SERVER_BULK_LISTENER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/bulk_socket.h"
#include "server/bulk_tls.h"
#include "server/hello_acceptor.h"

namespace tensord {

class BulkListener {
 public:
  // The channel of the session whose token this is, or null.
  using Lookup =
      std::function<std::shared_ptr<BulkChannel>(absl::string_view token)>;

  // Listens on `host`:`port` (0: a free port) and accepts until destroyed;
  // every connection through TLS when `tls` is set.
  static absl::StatusOr<std::unique_ptr<BulkListener>> Start(
      const std::string& host, int port, Lookup lookup,
      std::shared_ptr<const BulkTls> tls = nullptr);
  BulkListener(const BulkListener&) = delete;
  BulkListener& operator=(const BulkListener&) = delete;

  int port() const { return port_; }

 private:
  BulkListener(int port, Lookup lookup);
  // Attaches `fd` to the session its complete `hello` names, or closes it.
  void Admit(int fd, const char* hello);
  // The same for a TLS connection (answered through TLS).
  void AdmitTls(LaneSocket conn, const char* hello);
  // The session channel and lane a complete hello names, or null.
  std::shared_ptr<BulkChannel> Find(const char* hello, uint32_t* lane) const;

  const int port_;
  const Lookup lookup_;
  std::unique_ptr<HelloAcceptor> acceptor_;  // last: its thread uses the rest
};

// "host" of a "host:port" or "[v6]:port" listen address; empty for unix:
// addresses and anything else that names no TCP host.
std::string TcpHostOf(absl::string_view listen);

}  // namespace tensord

#endif  // TENSORD_SERVER_BULK_LISTENER_H_

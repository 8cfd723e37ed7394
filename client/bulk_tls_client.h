// The client end of the bulk socket's lanes (docs/protocol.md "Bulk socket";
// the daemon's end is server/bulk_tls.h): a lane is a socket read and written
// bare, or through TLS when the session has ClientOptions::tls. Then the
// lane's hello, answer and bytes all travel inside the TLS connection, and
// its handshake checks what gRPC checks on the stream:
//   - the daemon's certificate chains to TlsCredentials::root_certificates
//     (empty: OpenSSL's default verify paths), TLS 1.2 or later;
//   - it names the host of ClientOptions::address: an IP address among its
//     IP subject alternative names; a DNS name among its DNS names
//     (wildcards as RFC 6125 has them), or its subject CN when it has none;
//     the DNS name also goes out as SNI;
//   - the client certificate and key are presented when the options carry
//     them (mutual TLS; a daemon that refuses them closes the lane, which
//     the hello's answer then shows, under TLS 1.3 after the handshake).
// A lane is a LaneSocket (proto/lane_socket.h, shared with the daemon) used
// blocking; its TLS writes use send(MSG_NOSIGNAL): a daemon gone away is
// EPIPE, never SIGPIPE in the application.
//
// Ownership: BulkTlsClient owns the OpenSSL context that every lane of a
// session shares. Thread safety: immutable after Create.
#ifndef TENSORD_CLIENT_BULK_TLS_CLIENT_H_
#define TENSORD_CLIENT_BULK_TLS_CLIENT_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/options.h"
#include "proto/lane_socket.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace tensord {
inline namespace client {
namespace internal {

class BulkTlsClient {
 public:
  // The lanes' context from the session's PEM text. INVALID_ARGUMENT naming
  // the field OpenSSL could not use (never its contents).
  static absl::StatusOr<std::shared_ptr<const BulkTlsClient>> Create(
      const TlsCredentials& credentials);
  ~BulkTlsClient();
  BulkTlsClient(const BulkTlsClient&) = delete;
  BulkTlsClient& operator=(const BulkTlsClient&) = delete;

  // `fd` (connected to `host`, owned from here) after a TLS handshake that
  // verified the daemon as the header says, each read and write of it
  // bounded by `timeout`. UNAVAILABLE "TLS handshake with ... failed: why"
  // (e.g. "certificate verify failed: hostname mismatch"), `fd` closed,
  // otherwise.
  absl::StatusOr<LaneSocket> Handshake(int fd, const std::string& host,
                                       absl::Duration timeout) const;

 private:
  explicit BulkTlsClient(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* const ctx_;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_BULK_TLS_CLIENT_H_

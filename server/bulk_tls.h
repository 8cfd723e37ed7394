// TLS on the bulk socket's lanes (docs/protocol.md "Bulk socket"): when the
// daemon serves TLS, every lane is a TLS connection made with the gRPC
// listener's certificate and key (and, for mutual TLS, its client CA), and
// the lane's hello, answer and bytes all travel inside it. BulkTls holds the
// OpenSSL context; a lane's connection is a LaneSocket (proto/lane_socket.h,
// shared with the client), bare (a blocking socket, as plaintext lanes always
// were) or through TLS on a non-blocking socket, moved as poll says (Send,
// Recv; the handshake runs in the first reads).
//
// Thread safety: BulkTls is immutable after Create (OpenSSL contexts may be
// shared between threads).
#ifndef TENSORD_SERVER_BULK_TLS_H_
#define TENSORD_SERVER_BULK_TLS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "proto/lane_socket.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace tensord {

class BulkTls {
 public:
  // A server context from PEM files: the certificate chain and key, and for
  // mutual TLS the CA bundle client certificates must verify against (empty:
  // none asked). INVALID_ARGUMENT naming the file OpenSSL refused.
  static absl::StatusOr<std::shared_ptr<const BulkTls>> Create(
      const std::string& cert, const std::string& key,
      const std::string& client_ca);
  ~BulkTls();
  BulkTls(const BulkTls&) = delete;
  BulkTls& operator=(const BulkTls&) = delete;

  // The accepted socket `fd` (owned from here) as a TLS connection awaiting
  // its handshake, `fd` made non-blocking; a closed LaneSocket if OpenSSL
  // cannot make a session.
  LaneSocket Accept(int fd) const;
  bool mutual() const { return mutual_; }

 private:
  explicit BulkTls(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* const ctx_;
  bool mutual_ = false;  // client certificates required
};

}  // namespace tensord

#endif  // TENSORD_SERVER_BULK_TLS_H_

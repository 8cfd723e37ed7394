// TLS on the bulk socket's lanes (docs/protocol.md "Bulk socket"): when the
// daemon serves TLS, every lane is a TLS connection made with the gRPC
// listener's certificate and key (and, for mutual TLS, its client CA), and
// the lane's hello, answer and bytes all travel inside it. BulkTls holds the
// OpenSSL context; BulkConn is one lane's connection, bare or through TLS,
// moved without blocking (the caller polls).
//
// Thread safety: BulkTls is immutable after Create (OpenSSL contexts may be
// shared between threads). A BulkConn is used by one thread at a time, except
// Wake, which any thread may call.
#ifndef TENSORD_SERVER_BULK_TLS_H_
#define TENSORD_SERVER_BULK_TLS_H_

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace tensord {

// One lane's connection: a socket read and written bare (a blocking socket,
// as plaintext lanes always were), or through a server-side TLS session over
// it (a non-blocking socket; the handshake runs in the first reads).
class BulkConn {
 public:
  BulkConn() = default;
  explicit BulkConn(int fd, SSL* ssl = nullptr) : fd_(fd), ssl_(ssl) {}
  BulkConn(BulkConn&& other) noexcept;
  BulkConn& operator=(BulkConn&& other) noexcept;
  ~BulkConn();  // Close()

  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  bool tls() const { return ssl_ != nullptr; }

  // Up to `len` bytes into `dst` / from `src`: the count moved (> 0); 0 when
  // the peer closed; -1 with errno set, EAGAIN (TLS) meaning: poll the socket
  // for `*want` (POLLIN or POLLOUT), then call again with the same arguments.
  // A TLS failure sets EPROTO, its reason then in tls_error().
  ssize_t Recv(char* dst, size_t len, short* want);
  ssize_t Send(const char* src, size_t len, short* want);
  const std::string& tls_error() const { return tls_error_; }
  // Whether TLS holds bytes read from the socket already (decrypted or not),
  // which poll cannot see; a Recv may still need more (EAGAIN).
  bool Buffered() const;
  // Ends a Recv or Send in progress on another thread (shutdown, not close).
  void Wake();
  void Close();

 private:
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string tls_error_;
};

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
  // its handshake, `fd` made non-blocking; a closed BulkConn if OpenSSL
  // cannot make a session.
  BulkConn Accept(int fd) const;
  bool mutual() const { return mutual_; }

 private:
  explicit BulkTls(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* const ctx_;
  bool mutual_ = false;  // client certificates required
};

}  // namespace tensord

#endif  // TENSORD_SERVER_BULK_TLS_H_

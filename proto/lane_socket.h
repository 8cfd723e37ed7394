// One connection of the bulk socket's lanes (docs/protocol.md "Bulk
// socket"), for both ends: a socket read and written bare, or through a TLS
// session over it. The client moves whole spans on a blocking socket with
// timeouts (SendAll, RecvAll, SetTimeout; its TLS session writes through
// NoSignalBio); the daemon moves what poll says it can on a non-blocking TLS
// socket (Send, Recv, Buffered). The OpenSSL contexts stay with each end
// (client/bulk_tls_client.h, server/bulk_tls.h).
//
// Ownership: a LaneSocket owns its socket and TLS session (SSL_free frees
// its BIO, Close closes the socket).
// Thread safety: one thread at a time, except Wake, which any thread may
// call.
#ifndef TENSORD_PROTO_LANE_SOCKET_H_
#define TENSORD_PROTO_LANE_SOCKET_H_

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "absl/time/time.h"

typedef struct ssl_st SSL;

namespace tensord {

class LaneSocket {
 public:
  LaneSocket() = default;
  explicit LaneSocket(int fd, SSL* ssl = nullptr) : fd_(fd), ssl_(ssl) {}
  LaneSocket(LaneSocket&& other) noexcept;
  LaneSocket& operator=(LaneSocket&& other) noexcept;
  ~LaneSocket();  // Close()

  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  bool tls() const { return ssl_ != nullptr; }

  // Up to `len` bytes into `dst` / from `src`: the count moved (> 0); 0 when
  // the peer closed; -1 with errno set, EAGAIN on a non-blocking TLS socket
  // meaning: poll the socket for `*want` (POLLIN or POLLOUT), then call
  // again with the same arguments. A TLS failure sets EPROTO, its reason
  // then in tls_error().
  ssize_t Recv(char* dst, size_t len, short* want);
  ssize_t Send(const char* src, size_t len, short* want);
  // Blocking: moves exactly `n` bytes; the count moved before a failure
  // otherwise, errno then saying why (0: the peer closed; EPROTO: TLS
  // failed; EAGAIN: a timeout of SetTimeout ran out).
  size_t SendAll(const char* p, size_t n);
  size_t RecvAll(char* p, size_t n);
  // How long each later blocking receive and send may wait (zero: forever).
  void SetTimeout(absl::Duration timeout);
  // OpenSSL's reason for the last EPROTO (never key or certificate bytes).
  const std::string& tls_error() const { return tls_error_; }
  // Whether TLS holds bytes read from the socket already (decrypted or not),
  // which poll cannot see; a Recv may still need more (EAGAIN).
  bool Buffered() const;
  // Ends a transfer in progress on another thread (shutdown, not close).
  void Wake();
  void Close();

 private:
  // Recv/Send's result for an SSL_read_ex/SSL_write_ex that returned `r`.
  ssize_t Outcome(int r, size_t moved, short* want);

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string tls_error_;
};

// OpenSSL's reason for the last failure on this thread ("unknown reason"
// when it has none), and its error queue cleared.
std::string SslReason();

// Makes `ssl` read and write the blocking socket `fd` with recv and
// send(MSG_NOSIGNAL): OpenSSL's socket BIO writes with write(2), which
// raises SIGPIPE in the application when the peer has gone (EPIPE here).
// False when OpenSSL cannot make the BIO.
bool UseNoSignalBio(SSL* ssl, int fd);

}  // namespace tensord

#endif  // TENSORD_PROTO_LANE_SOCKET_H_

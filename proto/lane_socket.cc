#include "proto/lane_socket.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

namespace tensord {
namespace {

int FdOf(BIO* b) {
  return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(b)));
}
int BioWrite(BIO* b, const char* in, int n) {
  ssize_t r;
  do r = send(FdOf(b), in, static_cast<size_t>(n), MSG_NOSIGNAL);
  while (r < 0 && errno == EINTR);
  return static_cast<int>(r);
}
int BioRead(BIO* b, char* out, int n) {
  ssize_t r;
  do r = recv(FdOf(b), out, static_cast<size_t>(n), 0);
  while (r < 0 && errno == EINTR);
  return static_cast<int>(r);
}
long BioCtrl(BIO*, int cmd, long, void*) {  // NOLINT(runtime/int)
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}
int BioCreate(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}
const BIO_METHOD* NoSignalMethod() {
  static const BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "tensord bulk lane");
    if (m != nullptr) {
      BIO_meth_set_write(m, BioWrite);
      BIO_meth_set_read(m, BioRead);
      BIO_meth_set_ctrl(m, BioCtrl);
      BIO_meth_set_create(m, BioCreate);
    }
    return m;
  }();
  return method;
}

}  // namespace

std::string SslReason() {
  char buf[256] = "unknown reason";
  const unsigned long e = ERR_get_error();  // NOLINT(runtime/int)
  if (e != 0) ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

bool UseNoSignalBio(SSL* ssl, int fd) {
  BIO* bio = NoSignalMethod() != nullptr ? BIO_new(NoSignalMethod()) : nullptr;
  if (bio == nullptr) return false;
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  SSL_set_bio(ssl, bio, bio);  // one reference, owned by ssl
  return true;
}

LaneSocket::LaneSocket(LaneSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      ssl_(std::exchange(other.ssl_, nullptr)),
      tls_error_(std::move(other.tls_error_)) {}

LaneSocket& LaneSocket::operator=(LaneSocket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    ssl_ = std::exchange(other.ssl_, nullptr);
    tls_error_ = std::move(other.tls_error_);
  }
  return *this;
}

LaneSocket::~LaneSocket() { Close(); }

void LaneSocket::Close() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // frees the BIO, not the socket
  ssl_ = nullptr;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void LaneSocket::Wake() {
  if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
}

bool LaneSocket::Buffered() const {
  return ssl_ != nullptr && SSL_has_pending(ssl_) == 1;
}

void LaneSocket::SetTimeout(absl::Duration timeout) {
  const timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

ssize_t LaneSocket::Outcome(int r, size_t moved, short* want) {
  if (r == 1) return static_cast<ssize_t>(moved);
  const int saved = errno;  // the socket call's, for SSL_ERROR_SYSCALL
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ:
      *want = POLLIN;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_WANT_WRITE:
      *want = POLLOUT;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_ZERO_RETURN:  // close_notify
      ERR_clear_error();
      return 0;
    case SSL_ERROR_SYSCALL:
      ERR_clear_error();
      errno = saved;
      return saved == 0 ? 0 : -1;  // 0: EOF without close_notify
    default:  // e.g. an alert: the peer refused a certificate
      tls_error_ = SslReason();
      errno = EPROTO;
      return -1;
  }
}

ssize_t LaneSocket::Recv(char* dst, size_t len, short* want) {
  if (ssl_ == nullptr) return recv(fd_, dst, len, 0);
  ERR_clear_error();
  errno = 0;
  size_t got = 0;
  const int r = SSL_read_ex(ssl_, dst, len, &got);
  return Outcome(r, got, want);
}

ssize_t LaneSocket::Send(const char* src, size_t len, short* want) {
  if (ssl_ == nullptr) return send(fd_, src, len, MSG_NOSIGNAL);
  ERR_clear_error();
  errno = 0;
  size_t sent = 0;
  // A retry after WANT_WRITE must repeat the call: the same `src` and `len`
  // (the caller's position has not moved), so partial writes are allowed.
  const int r = SSL_write_ex(ssl_, src, len, &sent);
  return Outcome(r, sent, want);
}

size_t LaneSocket::SendAll(const char* p, size_t n) {
  size_t done = 0;
  short want = 0;
  while (done < n) {
    const ssize_t r = Send(p + done, n - done, &want);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) errno = 0;
    if (r <= 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

size_t LaneSocket::RecvAll(char* p, size_t n) {
  size_t done = 0;
  short want = 0;
  while (done < n) {
    const ssize_t r = Recv(p + done, n - done, &want);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) errno = 0;
    if (r <= 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

}  // namespace tensord

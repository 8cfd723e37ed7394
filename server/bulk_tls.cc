#include "server/bulk_tls.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace {

// The TLS read buffer of a lane: several 16 KiB records per read.
constexpr size_t kReadBufferBytes = 256 << 10;

// OpenSSL's reason for the last failure on this thread, and the queue
// cleared.
std::string SslReason() {
  char buf[256] = "unknown";
  const unsigned long e = ERR_get_error();  // NOLINT(runtime/int)
  if (e != 0) ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

// The result `r` of an SSL_read_ex/SSL_write_ex that moved `moved` bytes as
// Recv/Send report it; a failure's reason into `error`.
ssize_t Outcome(SSL* ssl, int r, size_t moved, short* want,
                std::string* error) {
  if (r == 1) return static_cast<ssize_t>(moved);
  switch (SSL_get_error(ssl, r)) {
    case SSL_ERROR_WANT_READ:
      *want = POLLIN;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_WANT_WRITE:
      *want = POLLOUT;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_ZERO_RETURN:
      return 0;
    case SSL_ERROR_SYSCALL:
      ERR_clear_error();
      if (errno == 0) return 0;  // EOF without close_notify
      return -1;
    default:
      *error = absl::StrCat("TLS: ", SslReason());
      errno = EPROTO;
      return -1;
  }
}

}  // namespace

BulkConn::BulkConn(BulkConn&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      ssl_(std::exchange(other.ssl_, nullptr)),
      tls_error_(std::move(other.tls_error_)) {}

BulkConn& BulkConn::operator=(BulkConn&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    ssl_ = std::exchange(other.ssl_, nullptr);
    tls_error_ = std::move(other.tls_error_);
  }
  return *this;
}

BulkConn::~BulkConn() { Close(); }

void BulkConn::Close() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  ssl_ = nullptr;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void BulkConn::Wake() {
  if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
}

bool BulkConn::Buffered() const {
  return ssl_ != nullptr && SSL_has_pending(ssl_) == 1;
}

ssize_t BulkConn::Recv(char* dst, size_t len, short* want) {
  if (ssl_ == nullptr) return recv(fd_, dst, len, 0);
  ERR_clear_error();
  errno = 0;
  size_t got = 0;
  const int r = SSL_read_ex(ssl_, dst, len, &got);
  return Outcome(ssl_, r, got, want, &tls_error_);
}

ssize_t BulkConn::Send(const char* src, size_t len, short* want) {
  if (ssl_ == nullptr) return send(fd_, src, len, MSG_NOSIGNAL);
  ERR_clear_error();
  errno = 0;
  size_t sent = 0;
  // A retry after WANT_WRITE must repeat the call: the same `src` and `len`
  // (the caller's position has not moved), so partial writes are allowed.
  const int r = SSL_write_ex(ssl_, src, len, &sent);
  return Outcome(ssl_, r, sent, want, &tls_error_);
}

absl::StatusOr<std::shared_ptr<const BulkTls>> BulkTls::Create(
    const std::string& cert, const std::string& key,
    const std::string& client_ca) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    return absl::InternalError(absl::StrCat("bulk socket TLS: ", SslReason()));
  }
  std::shared_ptr<BulkTls> tls(new BulkTls(ctx));
  auto refused = [](absl::string_view what, const std::string& path) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bulk socket TLS: cannot use ", what, " ", path, ": ", SslReason()));
  };
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Lanes are never resumed or renegotiated; a peer that closes without
  // close_notify is a closed lane, as a bare socket's EOF is.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET |
                               SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_mode(
      ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Records are read as many at a time as the buffer holds, not header and
  // body by a read each.
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_default_read_buffer_len(ctx, kReadBufferBytes);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1) {
    return refused("certificate", cert);
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    return refused("key", key);
  }
  if (!client_ca.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, client_ca.c_str(), nullptr) != 1) {
      return refused("client CA", client_ca);
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(client_ca.c_str());
    if (names != nullptr) SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       nullptr);
    tls->mutual_ = true;
  }
  return tls;
}

BulkTls::~BulkTls() { SSL_CTX_free(ctx_); }

BulkConn BulkTls::Accept(int fd) const {
  const int flags = fcntl(fd, F_GETFL);
  SSL* ssl = SSL_new(ctx_);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
      ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    spdlog::warn("bulk socket: no TLS session: {}", SslReason());
    if (ssl != nullptr) SSL_free(ssl);
    close(fd);
    return BulkConn();
  }
  SSL_set_accept_state(ssl);
  return BulkConn(fd, ssl);
}

}  // namespace tensord

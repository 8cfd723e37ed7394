// The bulk socket's lanes, bare or through TLS. See
// client/bulk_tls_client.h.
#include "client/bulk_tls_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

// The TLS read buffer of a lane: several 16 KiB records per read.
constexpr int kReadBufferBytes = 256 << 10;

// OpenSSL's reason for the last failure on this thread (no key or
// certificate bytes: reasons name what failed), and the queue cleared.
std::string SslReason() {
  char buf[256] = "unknown reason";
  const unsigned long e = ERR_get_error();  // NOLINT(runtime/int)
  if (e != 0) ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

// The lanes' BIO: OpenSSL's socket BIO writes with write(2), which raises
// SIGPIPE when the daemon has gone; this one sends with MSG_NOSIGNAL.
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
const BIO_METHOD* LaneBio() {
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

// Never a passphrase prompt on the terminal for an encrypted key: refused.
int NoPassphrase(char*, int, int, void*) { return 0; }

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
Bio PemBio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
             &BIO_free);
}

// Every certificate of `pem` into the context's trust store; how many.
int AddRoots(SSL_CTX* ctx, const std::string& pem) {
  Bio bio = PemBio(pem);
  int added = 0;
  while (X509* cert =
             PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr)) {
    added += X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), cert);
    X509_free(cert);
  }
  ERR_clear_error();  // the end of the text reads as a failure
  return added;
}

// The client's certificate chain (leaf first) and key; false on failure.
bool UseClientCert(SSL_CTX* ctx, const TlsCredentials& c) {
  Bio chain = PemBio(c.certificate_chain);
  X509* leaf = PEM_read_bio_X509(chain.get(), nullptr, NoPassphrase, nullptr);
  const bool leaf_used = leaf != nullptr && SSL_CTX_use_certificate(ctx, leaf);
  X509_free(leaf);
  if (!leaf_used) return false;
  while (X509* ca =
             PEM_read_bio_X509(chain.get(), nullptr, NoPassphrase, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) X509_free(ca);
  }
  ERR_clear_error();
  Bio key_bio = PemBio(c.private_key);
  EVP_PKEY* key =
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassphrase, nullptr);
  const bool key_used = key != nullptr && SSL_CTX_use_PrivateKey(ctx, key) &&
                        SSL_CTX_check_private_key(ctx) == 1;
  EVP_PKEY_free(key);
  return key_used;
}

// Why SSL_connect returned `r`, in words.
std::string HandshakeFailure(SSL* ssl, int r) {
  const long verify = SSL_get_verify_result(ssl);  // NOLINT(runtime/int)
  if (verify != X509_V_OK) {
    ERR_clear_error();
    return absl::StrCat("certificate verify failed: ",
                        X509_verify_cert_error_string(verify));
  }
  if (SSL_get_error(ssl, r) == SSL_ERROR_SYSCALL) {
    const int e = errno;
    ERR_clear_error();
    if (e == EAGAIN || e == EWOULDBLOCK) return "no answer in time";
    return e == 0 ? "the daemon closed the connection" : strerror(e);
  }
  return SslReason();
}

}  // namespace

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

void LaneSocket::SetTimeout(absl::Duration timeout) {
  const timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int LaneSocket::TlsFailure(int r) {
  const int saved = errno;  // the socket call's, for SSL_ERROR_SYSCALL
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_ZERO_RETURN:  // close_notify
      ERR_clear_error();
      return 0;
    case SSL_ERROR_SYSCALL:
      ERR_clear_error();
      return saved;
    default:  // e.g. an alert: the daemon refused the client certificate
      tls_error_ = SslReason();
      return EPROTO;
  }
}

size_t LaneSocket::SendAll(const char* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    size_t moved = 0;
    if (ssl_ == nullptr) {
      const ssize_t r = send(fd_, p + done, n - done, MSG_NOSIGNAL);
      if (r < 0 && errno == EINTR) continue;
      if (r > 0) moved = static_cast<size_t>(r);
    } else {
      ERR_clear_error();
      errno = 0;
      const int r = SSL_write_ex(ssl_, p + done, n - done, &moved);
      if (r != 1) errno = TlsFailure(r);
    }
    if (moved == 0) break;
    done += moved;
  }
  return done;
}

size_t LaneSocket::RecvAll(char* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    size_t moved = 0;
    if (ssl_ == nullptr) {
      const ssize_t r = recv(fd_, p + done, n - done, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r > 0) moved = static_cast<size_t>(r);
      if (r == 0) errno = 0;
    } else {
      ERR_clear_error();
      errno = 0;
      const int r = SSL_read_ex(ssl_, p + done, n - done, &moved);
      if (r != 1) errno = TlsFailure(r);
    }
    if (moved == 0) break;
    done += moved;
  }
  return done;
}

absl::StatusOr<std::shared_ptr<const BulkTlsClient>> BulkTlsClient::Create(
    const TlsCredentials& credentials) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr || LaneBio() == nullptr) {
    if (ctx != nullptr) SSL_CTX_free(ctx);
    return absl::InternalError(
        absl::StrCat("bulk socket TLS: no OpenSSL context: ", SslReason()));
  }
  std::shared_ptr<const BulkTlsClient> tls(new BulkTlsClient(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // As the daemon's lanes: no resumption or renegotiation; a closed socket
  // without close_notify is a closed lane.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET |
                               SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_default_read_buffer_len(ctx, kReadBufferBytes);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (credentials.root_certificates.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bulk socket TLS: cannot load the system's root certificates: ",
          SslReason()));
    }
  } else if (AddRoots(ctx, credentials.root_certificates) == 0) {
    return absl::InvalidArgumentError(
        "bulk socket TLS: ClientOptions::tls->root_certificates holds no PEM "
        "certificate");
  }
  if (!credentials.certificate_chain.empty() &&
      !UseClientCert(ctx, credentials)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bulk socket TLS: cannot use ClientOptions::tls->certificate_chain "
        "and private_key (PEM, unencrypted key matching the certificate): ",
        SslReason()));
  }
  return tls;
}

BulkTlsClient::~BulkTlsClient() { SSL_CTX_free(ctx_); }

absl::StatusOr<LaneSocket> BulkTlsClient::Handshake(
    int fd, const std::string& host, absl::Duration timeout) const {
  auto failed = [&host](absl::string_view why) {
    return absl::UnavailableError(
        absl::StrCat("TLS handshake with tensord's bulk socket at ", host,
                     " failed: ", why));
  };
  SSL* ssl = SSL_new(ctx_);
  BIO* bio = BIO_new(LaneBio());
  if (ssl == nullptr || bio == nullptr) {
    if (ssl != nullptr) SSL_free(ssl);
    if (bio != nullptr) BIO_free(bio);
    close(fd);
    return failed(SslReason());
  }
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  SSL_set_bio(ssl, bio, bio);  // one reference, owned by ssl
  LaneSocket lane(fd, ssl);    // closes both on failure
  lane.SetTimeout(timeout);
  // The name the certificate must carry, as gRPC checks the stream's.
  in_addr v4;
  in6_addr v6;
  const bool ip = inet_pton(AF_INET, host.c_str(), &v4) == 1 ||
                  inet_pton(AF_INET6, host.c_str(), &v6) == 1;
  const bool pinned =
      ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1
         : SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 &&
               SSL_set1_host(ssl, host.c_str()) == 1;
  if (!pinned) {
    return failed(absl::StrCat("cannot check the name: ", SslReason()));
  }
  ERR_clear_error();
  errno = 0;
  const int r = SSL_connect(ssl);
  if (r != 1) return failed(HandshakeFailure(ssl, r));
  return lane;
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

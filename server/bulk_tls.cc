#include "server/bulk_tls.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <unistd.h>


#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace {

// The TLS read buffer of a lane: several 16 KiB records per read.
constexpr size_t kReadBufferBytes = 256 << 10;

}  // namespace

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

LaneSocket BulkTls::Accept(int fd) const {
  const int flags = fcntl(fd, F_GETFL);
  SSL* ssl = SSL_new(ctx_);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
      ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    spdlog::warn("bulk socket: no TLS session: {}", SslReason());
    if (ssl != nullptr) SSL_free(ssl);
    close(fd);
    return LaneSocket();
  }
  SSL_set_accept_state(ssl);
  return LaneSocket(fd, ssl);
}

}  // namespace tensord

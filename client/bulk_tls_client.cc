// The client's TLS for the bulk socket's lanes. See client/bulk_tls_client.h.
#include "client/bulk_tls_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

// The TLS read buffer of a lane: several 16 KiB records per read.
constexpr int kReadBufferBytes = 256 << 10;

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

absl::StatusOr<std::shared_ptr<const BulkTlsClient>> BulkTlsClient::Create(
    const TlsCredentials& credentials) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
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
  LaneSocket lane(fd, ssl);  // closes both on failure
  if (ssl == nullptr || !UseNoSignalBio(ssl, fd)) return failed(SslReason());
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

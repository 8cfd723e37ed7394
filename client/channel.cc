#include "client/channel.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

// The stream's credentials: ClientOptions::tls as gRPC's SSL credentials, or
// ClientOptions::credentials, or none (plaintext).
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> CredentialsOf(
    const ClientOptions& options) {
  if (!options.tls.has_value()) {
    return options.credentials ? options.credentials
                               : grpc::InsecureChannelCredentials();
  }
  if (options.credentials != nullptr) {
    return absl::InvalidArgumentError(
        "set ClientOptions::tls or ClientOptions::credentials, not both (tls "
        "secures the stream and the bulk socket's lanes, credentials the "
        "stream alone)");
  }
  const TlsCredentials& tls = *options.tls;
  if (tls.private_key.empty() != tls.certificate_chain.empty()) {
    return absl::InvalidArgumentError(
        "ClientOptions::tls: private_key and certificate_chain go together "
        "(both for mutual TLS, neither otherwise)");
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = tls.root_certificates;
  ssl.pem_private_key = tls.private_key;
  ssl.pem_cert_chain = tls.certificate_chain;
  return grpc::SslCredentials(ssl);
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> ConnectChannel(
    const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  // Note [Transfer window] (server/daemon_listeners.cc): downloads get an 8 MiB
  // HTTP/2 window and chunk-sized HTTP/2 frames; for a daemon on this host the
  // window stays fixed (no BDP probing), elsewhere gRPC may adapt it to
  // the link.
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20);
  args.SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 4 << 20);
  if (IsSameHostAddress(options.address)) {
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  }
  if (options.resume) {
    // A resume reconnects at once, not after gRPC's default 1-120 s backoff.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  }
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      CredentialsOf(options);
  if (!credentials.ok()) return credentials.status();
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(options.address, *credentials, args);
  if (!channel->WaitForConnected(
          std::chrono::system_clock::now() +
          absl::ToChronoMilliseconds(options.connect_timeout))) {
    return absl::UnavailableError(absl::StrCat(
        "cannot reach tensord at ", options.address, " (no connection within ",
        absl::FormatDuration(options.connect_timeout),
        "); is the daemon running? Set TENSORD_ADDRESS or "
        "ClientOptions::address"));
  }
  return channel;
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

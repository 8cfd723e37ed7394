// The daemon's listeners, as main.cc wires them from its flags: the gRPC
// server's credentials and channel settings, the bulk sockets' listener,
// cross-memory attach's binding socket, the Prometheus exporter, a unix:
// socket's placement, and the port files that tests and scripts read. Each
// Start* logs what it started, or why not. Called from main's thread, before
// the gRPC server accepts (so every session's Welcome can name the ports); not
// thread-safe.
#ifndef TENSORD_SERVER_DAEMON_LISTENERS_H_
#define TENSORD_SERVER_DAEMON_LISTENERS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "server/bulk_listener.h"
#include "server/cma_binder.h"
#include "server/listen_address.h"
#include "server/metrics_exporter.h"
#include "server/session_manager.h"

namespace tensord {

// PEM files: the server's certificate chain and key (both or neither), and
// a CA bundle that client certificates must verify against (mutual TLS).
struct TlsFiles {
  std::string cert;
  std::string key;
  std::string client_ca;
};

// Plaintext when `tls` names no files; TLS, or mutual TLS with client_ca.
// INVALID_ARGUMENT for half a pair, NOT_FOUND for a file it cannot read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const TlsFiles& tls);

// The channel settings of the daemon's gRPC server: frame-sized messages,
// keepalive that finds dead peers in seconds, and Note [Transfer window]
// (`http2_bdp_probe`: tensord --http2_bdp_probe).
void ConfigureServerBuilder(grpc::ServerBuilder* builder, bool http2_bdp_probe);

// The bulk sockets' listener on the host of `listen` at `port` (0: a free
// one), its port given to `sessions`; every lane through TLS with the gRPC
// listener's `tls` files when they name a certificate. Null when `port` < 0,
// for a unix: address, or when it cannot listen or load the files: sessions
// then use the stream alone.
std::unique_ptr<BulkListener> StartBulkListener(SessionManager* sessions,
                                                const std::string& listen,
                                                int port, const TlsFiles& tls);

// Cross-memory attach's binding socket, its name given to `sessions`; null
// when it cannot listen (sessions then use the region's slots).
std::unique_ptr<CmaBinder> StartCmaBinder(SessionManager* sessions);

struct MetricsOptions {
  std::string listen;         // HOST:PORT; empty: no metrics
  bool allow_remote = false;  // Note [Metrics address]
  std::string port_file;      // if set, the port is written there
};
// The Prometheus exporter, or null when `options.listen` is empty; an error
// when it cannot serve there (the daemon then refuses to start).
absl::StatusOr<std::unique_ptr<MetricsExporter>> StartMetrics(
    SessionManager* sessions, const MetricsOptions& options);

// Note [Unix listen sockets]: for a `listen` of unix:PATH, the placement
// gRPC binds in, checked before anything is created (`mode`: the text of
// tensord --unix_socket_mode); null for a TCP address.
absl::StatusOr<std::unique_ptr<UnixSocketPlacement>> PrepareUnixListen(
    const std::string& listen, absl::string_view mode);

// Writes `port` to `path` whole (a rename), so a reader never sees half.
void WritePortFile(const std::string& path, int port);

}  // namespace tensord

#endif  // TENSORD_SERVER_DAEMON_LISTENERS_H_

#include "server/daemon_listeners.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "server/cma_ticket_binding.h"
#include "server/metrics_collector.h"
#include "server/nvml.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const TlsFiles& tls) {
  if (tls.cert.empty() && tls.key.empty()) {
    if (!tls.client_ca.empty()) {
      return absl::InvalidArgumentError(
          "--tls_client_ca needs --tls_cert and --tls_key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (tls.cert.empty() || tls.key.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both --tls_cert and --tls_key");
  }
  grpc::SslServerCredentialsOptions options(
      tls.client_ca.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  TD_ASSIGN_OR_RETURN(pair.cert_chain, ReadFile(tls.cert));
  TD_ASSIGN_OR_RETURN(pair.private_key, ReadFile(tls.key));
  options.pem_key_cert_pairs.push_back(std::move(pair));
  if (!tls.client_ca.empty()) {
    TD_ASSIGN_OR_RETURN(options.pem_root_certs, ReadFile(tls.client_ca));
  }
  return grpc::SslServerCredentials(options);
}

void ConfigureServerBuilder(grpc::ServerBuilder* builder,
                            bool http2_bdp_probe) {
  builder->SetMaxReceiveMessageSize(
      static_cast<int>(kMaxFrameBytes + (1 << 20)));
  builder->SetMaxSendMessageSize(static_cast<int>(kMaxFrameBytes + (1 << 20)));
  // Detect dead peers in seconds: ping idle connections every 10 s.
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Note [Transfer window]: stream transfers (Put/Data chunks) ask for an
  // HTTP/2 window of 8 MiB instead of 64 KiB and HTTP/2 frames as large as
  // a chunk instead of 16 KiB pieces. Without BDP probing gRPC never
  // announces more than the 64 KiB initial window before a message's bytes
  // arrive: through a WAN proxy (tools/bench/wan_bench.py) a Put of 70 KB
  // or more took two round trips instead of one, and an MLP step with a
  // 0.8 MB batch 2.15 round trips at RTT 200 ms against 0.97 with probing
  // (BENCHMARKS.md, "Through a WAN"). So probing is on by default; it costs
  // the loopback stream path (used only without shared memory and without
  // the bulk socket) 25-40% on 256 MiB transfers, a path that met no aim
  // either way. --http2_bdp_probe=false restores the fixed window. The C++
  // client keeps its own receive window fixed for a daemon on its host.
  builder->AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 4 << 20);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE,
                              http2_bdp_probe ? 1 : 0);
}

std::unique_ptr<BulkListener> StartBulkListener(SessionManager* sessions,
                                                const std::string& listen,
                                                int port,
                                                const TlsFiles& tls) {
  const std::string host = TcpHostOf(listen);
  if (port < 0 || host.empty()) return nullptr;
  std::shared_ptr<const BulkTls> context;
  if (!tls.cert.empty()) {
    auto made = BulkTls::Create(tls.cert, tls.key, tls.client_ca);
    if (!made.ok()) {
      spdlog::warn("{}; transfers use the stream alone",
                   made.status().ToString());
      return nullptr;
    }
    context = *std::move(made);
  }
  auto listener = BulkListener::Start(
      host, port,
      [sessions](absl::string_view token) {
        return sessions->FindBulk(token);
      },
      context);
  if (!listener.ok()) {
    spdlog::warn("{}; transfers use the stream alone",
                 listener.status().ToString());
    return nullptr;
  }
  sessions->SetBulkPort((*listener)->port());
  spdlog::info("bulk socket on {}:{}{}", host, (*listener)->port(),
               context == nullptr ? ""
               : context->mutual() ? " (mutual TLS)"
                                   : " (TLS)");
  return *std::move(listener);
}

std::unique_ptr<CmaBinder> StartCmaBinder(SessionManager* sessions) {
  auto binder = CmaBinder::Start(
      [sessions](absl::string_view ticket, absl::StatusOr<PeerProcess> peer) {
        return BindCmaTicket(*sessions, ticket, std::move(peer));
      });
  if (!binder.ok()) {
    spdlog::warn("{}; no cross-memory attach", binder.status().ToString());
    return nullptr;
  }
  sessions->SetCmaSocket((*binder)->name());
  return *std::move(binder);
}

absl::StatusOr<std::unique_ptr<MetricsExporter>> StartMetrics(
    SessionManager* sessions, const MetricsOptions& options) {
  if (options.listen.empty()) return nullptr;
  std::string why;
  std::unique_ptr<Nvml> nvml = Nvml::Load(&why);
  if (nvml == nullptr) spdlog::info("no GPU metrics: {}", why);
  TD_ASSIGN_OR_RETURN(
      std::unique_ptr<MetricsExporter> exporter,
      MetricsExporter::Start(
          options.listen, options.allow_remote,
          std::make_shared<const MetricsCollector>(sessions, std::move(nvml))));
  spdlog::info("metrics on http://{}:{}/metrics",
               options.listen.substr(0, options.listen.rfind(':')),
               exporter->port());
  if (!options.port_file.empty()) {
    WritePortFile(options.port_file, exporter->port());
  }
  return exporter;
}

absl::StatusOr<std::unique_ptr<UnixSocketPlacement>> PrepareUnixListen(
    const std::string& listen, absl::string_view mode) {
  if (listen.rfind("unix:", 0) != 0) return nullptr;
  TD_ASSIGN_OR_RETURN(const mode_t parsed, ParseSocketMode(mode));
  return UnixSocketPlacement::Prepare(listen.substr(5), parsed);
}

void WritePortFile(const std::string& path, int port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << port << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace tensord

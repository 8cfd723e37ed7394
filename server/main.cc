// tensord: the tensor execution daemon.
//
//   tensord --listen=127.0.0.1:50051 --tokens_file=/etc/tensord/tokens
//   tensord --listen=127.0.0.1:0 --insecure --port_file=/tmp/port  (tests)
//
// SIGINT/SIGTERM shut down cleanly (sessions told, memory freed, exit 0);
// SIGHUP reloads the tokens file. A sticky device error ends every session
// with the error and exits 75 (EX_TEMPFAIL) for the supervisor to restart
// the daemon (Note [Sticky device errors] in runtime/core/device_error.h;
// server/daemon_shutdown.h).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "runtime/core/device_error.h"
#include "runtime/core/status_macros.h"
#include "runtime/core/transfer_buffers.h"
#include "runtime/device.h"
#include "server/admin_memory.h"
#include "server/daemon_listeners.h"
#include "server/daemon_log.h"
#include "server/daemon_shutdown.h"
#include "server/grpc_admin.h"
#include "server/grpc_stream.h"
#include "server/listen_address.h"
#include "server/secure_random.h"
#include "server/session_manager.h"
#include "server/version.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "host:port to listen on (port 0 picks a free port and logs it), or "
          "unix:/path for a Unix domain socket");
ABSL_FLAG(bool, insecure, false,
          "allow running without --tokens_file (local development only: "
          "every caller is an admin, so only loopback and unix: --listen "
          "addresses are allowed)");
ABSL_FLAG(std::string, tokens_file, "",
          "file of 'USER TOKEN [quota=..] [admin]' lines; required unless "
          "--insecure");
ABSL_FLAG(std::string, log_level, "info", "trace|debug|info|warn|error");
ABSL_FLAG(std::string, port_file, "",
          "if set, the chosen port is written there once listening");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM server certificate chain: serve TLS (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: require and verify client certificates (mutual TLS)");
ABSL_FLAG(std::string, unix_socket_mode, "0660",
          "permissions of a --listen=unix:PATH socket (the on-box gate), "
          "octal; the socket appears at PATH with them (Note [Unix listen "
          "sockets], server/listen_address.h)");
ABSL_FLAG(absl::Duration, resume_grace, absl::Seconds(30),
          "how long a session whose stream dropped can be resumed before its "
          "memory is released");
ABSL_FLAG(int, max_sessions_per_user, 16, "open sessions allowed per user");
ABSL_FLAG(absl::Duration, hello_timeout, absl::Seconds(10),
          "how long a new stream may take to send its Hello before it is "
          "closed (DEADLINE_EXCEEDED)");
ABSL_FLAG(int, max_unauthenticated_streams, 256,
          "streams allowed at once that have not authenticated yet (waiting "
          "for their Hello or for a held-back refusal); more are refused "
          "with RESOURCE_EXHAUSTED");
ABSL_FLAG(int, max_unauthenticated_streams_per_host, 32,
          "of --max_unauthenticated_streams, how many one host (peer address "
          "without its port) may hold, so that one host cannot take them all");
ABSL_FLAG(uint64_t, shm_bytes, 256 << 20,
          "budget of the shared-memory region offered to same-host clients "
          "that ask for one (0: off, and with it the local transport): the "
          "region holds a mailbox and the command ring, at most a sixteenth "
          "of this (4 MiB), no payload (bytes go through shared buffers)");
ABSL_FLAG(bool, command_ring, true,
          "let same-host clients with a shared-memory region write their "
          "batches into a command ring in it instead of the stream "
          "(docs/protocol.md \"Command ring\")");
ABSL_FLAG(int, ring_spin_us, 100,
          "how long a session's command ring reader polls an empty ring "
          "(yielding its CPU to any other thread) before it sleeps");
ABSL_FLAG(bool, cma, true,
          "let same-host clients with a shared-memory region, running as the "
          "daemon's user, transfer by cross-memory attach (the daemon copies "
          "between their memory and tensor storage itself, once; a client "
          "process binds its session through a unix socket, the kernel "
          "names it; docs/protocol.md)");
ABSL_FLAG(int, bulk_port, 0,
          "TCP port of the bulk socket beside each session's stream, which "
          "carries the bytes of large transfers (docs/protocol.md \"Bulk "
          "socket\"), on --listen's host: 0 picks a free one, -1 turns it "
          "off; off for unix: addresses; TLS (the --tls_* files) whenever "
          "the daemon serves TLS");
ABSL_FLAG(absl::Duration, bulk_stall, absl::Seconds(30),
          "how long a transfer on a bulk socket waits for the client to move "
          "a byte before it fails");
ABSL_FLAG(uint32_t, bulk_lanes, 4,
          "how many connections a session's bulk socket may have (1 to 8); "
          "a transfer of 8 MiB or more is striped over them, so both ends' "
          "cores share the copies and the TCP work");
ABSL_FLAG(uint64_t, shared_buffer_bytes, uint64_t{8} << 30,
          "the most bytes of shared buffers (AllocateShared: same-host "
          "memory transferred with one copy) one session may hold; user "
          "quotas apply on top (0: off)");
ABSL_FLAG(bool, cuda_graph_replay, false,
          "Note [Graph replay]: recognise a session's repeated steps (same "
          "ops, shapes and handle roles between reads) to capture them as "
          "CUDA graphs and replay each with one launch. EXPERIMENTAL, off by "
          "default: it has NOT RUN ON A GPU yet, and today it only counts "
          "the steps it would capture and replay (every step runs eagerly; "
          "results are unchanged)");
ABSL_FLAG(bool, http2_bdp_probe, true,
          "let gRPC size each stream's HTTP/2 window by probing the link's "
          "bandwidth-delay product: without it an upload of more than 64 KiB "
          "on the stream waits one more round trip for a window update "
          "(Note [Transfer window]); off: faster loopback stream transfers, "
          "used only without shared memory and the bulk socket "
          "(docs/daemon.md)");
ABSL_FLAG(std::string, devices, "",
          "comma-separated devices to serve, e.g. cpu,cuda:0 (default: all)");
ABSL_FLAG(std::string, default_device, "cpu",
          "where commands that name no device put tensors, until a session "
          "sets its own (SetOptions.default_device): cpu, as in PyTorch, or "
          "e.g. cuda:0");

ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT to serve Prometheus metrics on at /metrics (port 0 "
          "picks a free one and logs it); empty: no metrics. Loopback only "
          "unless --metrics_allow_remote (Note [Metrics address], "
          "server/metrics_exporter.h)");
ABSL_FLAG(bool, metrics_allow_remote, false,
          "let --metrics_listen name a non-loopback address: the metrics, "
          "which name users and sessions, are served there without "
          "authentication");
ABSL_FLAG(std::string, metrics_port_file, "",
          "if set, the metrics port is written there once listening");

ABSL_FLAG(uint64_t, memory_history, 0,
          "keep the newest N allocation and free events of each device (with "
          "session and call site) for tensorctl snapshot's device_traces, as "
          "torch.cuda.memory._record_memory_history; 0: off (tensorctl "
          "memory-history turns it on and off while running)");
ABSL_FLAG(std::string, fault_inject_sticky_error_op, "",
          "TESTING ONLY: calls of this op fail with a sticky device error, "
          "so the daemon's exit-for-restart path can be tested");

namespace tensord {
namespace {

int Main() {
  // Debian's Abseil is built without NDEBUG, so every Mutex lock would also
  // run the deadlock detector (half the cost of a cached allocation).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Note [Transfer buffers] (runtime/core/transfer_buffers.h): 1 MiB chunk
  // buffers stay in the heap. Not higher: kernels' large temporaries (im2col
  // columns, on the intra-op threads' arenas) must stay mmap'ed; with a 32 MiB
  // mmap and 128 MiB trim threshold the CNN training step was 20-30% slower
  // (37-40 against 29-31 ms in interleaved runs) for no transfer gain.
  KeepTransferBuffersMapped(/*mmap_threshold=*/2 << 20,
                            /*trim_threshold=*/32 << 20);
  spdlog::set_level(spdlog::level::from_str(absl::GetFlag(FLAGS_log_level)));
  spdlog::set_formatter(EscapingLogFormatter());  // Note [Client text]
  // Secrets come from getrandom(2) or not at all: find out now, not at the
  // first Hello.
  if (absl::StatusOr<std::string> probe = SecureRandomBytes(16); !probe.ok()) {
    spdlog::critical("{}", probe.status().ToString());
    return 2;
  }
  // Block the shutdown signals in every thread; the main thread waits on them.
  const sigset_t signals = BlockDaemonSignals();
  if (!absl::GetFlag(FLAGS_fault_inject_sticky_error_op).empty()) {
    spdlog::warn("TESTING ONLY: {} fails with a sticky device error",
                 absl::GetFlag(FLAGS_fault_inject_sticky_error_op));
    SetInjectedStickyErrorOp(absl::GetFlag(FLAGS_fault_inject_sticky_error_op));
  }

  std::unique_ptr<Authenticator> auth;
  if (!absl::GetFlag(FLAGS_tokens_file).empty()) {
    auto loaded = Authenticator::FromFile(absl::GetFlag(FLAGS_tokens_file));
    if (!loaded.ok()) {
      spdlog::critical("{}", loaded.status().ToString());
      return 2;
    }
    auth = *std::move(loaded);
  } else if (absl::GetFlag(FLAGS_insecure)) {
    spdlog::warn(
        "--insecure: no tokens are checked; anyone who can reach {} "
        "gets a session",
        absl::GetFlag(FLAGS_listen));
    auth = Authenticator::Insecure();
    if (absl::Status s = CheckInsecureListen(absl::GetFlag(FLAGS_listen));
        !s.ok()) {
      spdlog::critical("{}", std::string(s.message()));
      return 2;
    }
  } else {
    spdlog::critical(
        "refusing to start without --tokens_file; pass --insecure "
        "for local development");
    return 2;
  }

  // Note [Unix listen sockets]: checked before anything is created.
  const std::string listen = absl::GetFlag(FLAGS_listen);
  auto unix_socket =
      PrepareUnixListen(listen, absl::GetFlag(FLAGS_unix_socket_mode));
  if (!unix_socket.ok()) {
    spdlog::critical("{}", std::string(unix_socket.status().message()));
    return 2;
  }

  std::vector<std::string> allowed;
  if (!absl::GetFlag(FLAGS_devices).empty()) {
    allowed = absl::StrSplit(absl::GetFlag(FLAGS_devices), ',');
  }
  auto devices = DeviceRegistry::Create(allowed);
  if (absl::Status s =
          devices->SetDefaultDevice(absl::GetFlag(FLAGS_default_device));
      !s.ok()) {
    spdlog::critical("--default_device: {}", std::string(s.message()));
    return 2;
  }
  if (const uint64_t n = absl::GetFlag(FLAGS_memory_history); n > 0) {
    if (n > kMaxHistoryEntries) {
      spdlog::critical("--memory_history={}: at most {} events per device", n,
                       kMaxHistoryEntries);
      return 2;
    }
    for (const auto& d : devices->devices()) d->allocator()->RecordHistory(n);
  }
  const uint32_t bulk_lanes = absl::GetFlag(FLAGS_bulk_lanes);
  if (bulk_lanes < 1 || bulk_lanes > kBulkMaxLanes) {
    spdlog::critical("--bulk_lanes={}: must be 1 to {}", bulk_lanes,
                     kBulkMaxLanes);
    return 2;
  }
  SessionLimits limits;
  limits.resume_grace = absl::GetFlag(FLAGS_resume_grace);
  limits.max_sessions_per_user = absl::GetFlag(FLAGS_max_sessions_per_user);
  limits.shm_bytes = absl::GetFlag(FLAGS_shm_bytes);
  limits.cma = absl::GetFlag(FLAGS_cma);
  limits.command_ring = absl::GetFlag(FLAGS_command_ring);
  limits.ring_spin_us = absl::GetFlag(FLAGS_ring_spin_us);
  limits.shared_buffer_bytes = absl::GetFlag(FLAGS_shared_buffer_bytes);
  limits.graph_replay = absl::GetFlag(FLAGS_cuda_graph_replay);
  limits.bulk_stall = absl::GetFlag(FLAGS_bulk_stall);
  limits.bulk_lanes = bulk_lanes;
  SessionManager sessions(devices.get(), auth.get(), limits);
  // Before the server accepts: every session's Welcome can name its port.
  std::unique_ptr<BulkListener> bulk = StartBulkListener(
      &sessions, absl::GetFlag(FLAGS_listen), absl::GetFlag(FLAGS_bulk_port),
      {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
       absl::GetFlag(FLAGS_tls_client_ca)});
  std::unique_ptr<CmaBinder> cma_binder =
      absl::GetFlag(FLAGS_cma) ? StartCmaBinder(&sessions) : nullptr;
  auto metrics =
      StartMetrics(&sessions, {absl::GetFlag(FLAGS_metrics_listen),
                               absl::GetFlag(FLAGS_metrics_allow_remote),
                               absl::GetFlag(FLAGS_metrics_port_file)});
  if (!metrics.ok()) {
    spdlog::critical("{}", std::string(metrics.status().message()));
    return 2;
  }
  StreamGuards guards;  // Note [Unauthenticated streams]
  guards.hello_timeout = absl::GetFlag(FLAGS_hello_timeout);
  guards.max_unauthenticated = absl::GetFlag(FLAGS_max_unauthenticated_streams);
  guards.max_unauthenticated_per_host =
      absl::GetFlag(FLAGS_max_unauthenticated_streams_per_host);
  AuthGate auth_gate(guards);  // both services' (Note [Failed authentications])
  TensordService tensord_service(&sessions, &auth_gate);
  AdminService admin_service(&sessions, absl::GetFlag(FLAGS_listen),
                             &auth_gate);

  auto credentials = ServerCredentials({absl::GetFlag(FLAGS_tls_cert),
                                        absl::GetFlag(FLAGS_tls_key),
                                        absl::GetFlag(FLAGS_tls_client_ca)});
  if (!credentials.ok()) {
    spdlog::critical("{}", credentials.status().ToString());
    return 2;
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(
      *unix_socket ? (*unix_socket)->bind_address() : listen, *credentials,
      &port);
  builder.RegisterService(&tensord_service);
  builder.RegisterService(&admin_service);
  ConfigureServerBuilder(&builder, absl::GetFlag(FLAGS_http2_bdp_probe));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    spdlog::critical("cannot listen on {}", absl::GetFlag(FLAGS_listen));
    return 2;
  }
  if (*unix_socket != nullptr) {
    if (absl::Status s = (*unix_socket)->Publish(); !s.ok()) {
      spdlog::critical("{}", std::string(s.message()));
      server->Shutdown();
      return 2;
    }
  }
  if (listen.rfind("unix:", 0) != 0) {
    const std::string host = listen.substr(0, listen.rfind(':'));
    spdlog::info("tensord {} listening on {}:{} (devices: {})", kServerVersion,
                 host, port, devices->Names());
  } else {
    spdlog::info("tensord {} listening on {} (devices: {})", kServerVersion,
                 listen, devices->Names());
  }
  if (!absl::GetFlag(FLAGS_port_file).empty()) {
    WritePortFile(absl::GetFlag(FLAGS_port_file), port);
  }

  const absl::Status fatal = WaitForShutdown(signals, auth.get(), &sessions);
  return EndDaemon(&sessions, server.get(), fatal);
}

}  // namespace
}  // namespace tensord

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("tensord: the tensor execution daemon");
  absl::FlagsUsageConfig usage;  // --version: Note [Version] (server/BUILD)
  usage.version_string = [] {
    return absl::StrCat("tensord ", tensord::kServerVersion, "\n");
  };
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);
  return tensord::Main();
}

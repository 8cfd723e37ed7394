// How the daemon stops: the main thread waits for signals (SIGINT and
// SIGTERM shut down, SIGHUP reloads the tokens file, SIGUSR1 is a sticky
// device error seen on another thread), then ends every session and the
// server; after a sticky device error it exits 75 (EX_TEMPFAIL) for the
// supervisor to restart it (Note [Sticky device errors] in
// runtime/core/device_error.h).
#ifndef TENSORD_SERVER_DAEMON_SHUTDOWN_H_
#define TENSORD_SERVER_DAEMON_SHUTDOWN_H_

#include <signal.h>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "server/auth.h"
#include "server/session_manager.h"

namespace tensord {

// The exit status after a sticky device error: "restart me".
constexpr int kExitDeviceFailed = 75;  // EX_TEMPFAIL, as cuda::kStickyExitCode

// Blocks the signals above in the calling thread and every thread it starts
// later (call it before any) and routes sticky device errors to SIGUSR1.
// Returns the set WaitForShutdown waits on.
sigset_t BlockDaemonSignals();

// Waits for a shutdown signal, reloading `auth` on SIGHUP (Note [Tokens
// reload]). Returns the sticky device error that ended the wait, or OK.
absl::Status WaitForShutdown(const sigset_t& signals, Authenticator* auth,
                             SessionManager* sessions);

// Ends every session and stops `server`; returns the exit status: 0, or
// kExitDeviceFailed when `fatal` (a sticky device error) is not OK.
int EndDaemon(SessionManager* sessions, grpc::Server* server,
              const absl::Status& fatal);

}  // namespace tensord

#endif  // TENSORD_SERVER_DAEMON_SHUTDOWN_H_

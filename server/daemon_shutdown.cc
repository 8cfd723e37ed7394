#include "server/daemon_shutdown.h"

#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "runtime/core/device_error.h"
#include "runtime/core/mutex.h"
#include "runtime/cuda_discovery.h"
#include "server/tokens_reload.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace {

// Set once by the sticky-error handler, read by the main thread after it
// wakes on SIGUSR1.
Mutex fatal_mu(absl::kConstInit);
absl::Status* fatal_error ABSL_GUARDED_BY(fatal_mu) = nullptr;

// Runs on the thread that saw the error: records it and wakes the main
// thread, which ends the sessions (the caller may be one of them).
void OnStickyDeviceError(const absl::Status& error) {
  {
    MutexLock lock(&fatal_mu);
    fatal_error = new absl::Status(error);
  }
  spdlog::critical("{}", error.ToString());
  kill(getpid(), SIGUSR1);
}

// Tells every session `reason` and waits for them, and stops the server.
// Both at once: a session whose client stopped reading is blocked sending
// to it until the server cancels its stream (5 s after the shutdown starts),
// and the server waits for the sessions' streams to finish.
void EndEverything(SessionManager* sessions, grpc::Server* server,
                   absl::Status reason) {
  std::thread ending([&] { sessions->Shutdown(reason); });
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  ending.join();
}

}  // namespace

sigset_t BlockDaemonSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGUSR1);  // a sticky device error (OnStickyDeviceError)
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  SetStickyErrorHandler(&OnStickyDeviceError);       // runtime/core
  SetFatalDeviceErrorHandler(&OnStickyDeviceError);  // CUDA's own checks
  return signals;
}

absl::Status WaitForShutdown(const sigset_t& signals, Authenticator* auth,
                             SessionManager* sessions) {
  while (true) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig == SIGHUP) {
      absl::Status reloaded = auth->Reload();
      if (!reloaded.ok()) {
        spdlog::error(
            "SIGHUP: the tokens file was not reloaded (the old "
            "tokens stay): {}",
            reloaded.ToString());
        continue;
      }
      spdlog::info("SIGHUP: tokens reloaded");
      ApplyTokens(sessions);  // Note [Tokens reload]
      continue;
    }
    if (sig == SIGUSR1) break;
    spdlog::info("signal {}: shutting down", sig);
    break;
  }
  absl::Status fatal;
  {
    MutexLock lock(&fatal_mu);
    if (fatal_error != nullptr) fatal = *fatal_error;
  }
  return fatal;
}

int EndDaemon(SessionManager* sessions, grpc::Server* server,
              const absl::Status& fatal) {
  if (!fatal.ok()) {
    // Every session hears why; then exit for the supervisor to restart us.
    // A device that hangs instead of failing must not keep us here.
    std::thread([] {
      absl::SleepFor(absl::Seconds(20));
      spdlog::critical("sessions did not end within 20 s; exiting now");
      _exit(kExitDeviceFailed);
    }).detach();
    EndEverything(sessions, server,
                  absl::UnavailableError(absl::StrCat("tensord is restarting: ",
                                                      fatal.message())));
    spdlog::critical("tensord exits with status {} for a restart",
                     kExitDeviceFailed);
    return kExitDeviceFailed;
  }
  EndEverything(sessions, server,
                absl::UnavailableError("tensord is shutting down"));
  spdlog::info("tensord stopped");
  return 0;
}

}  // namespace tensord

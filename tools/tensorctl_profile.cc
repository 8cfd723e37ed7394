// tensorctl profile SESSION: turns the session's op profiler on for a while
// (--duration), then prints where its ops spent their time (phases per op:
// wait, decode, infer, alloc, kernel) and writes a Chrome trace with -o.
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/tensorctl_commands.h"
#include "tools/tensorctl_profile_view.h"

namespace tensord {
namespace tensorctl {
namespace {

absl::Status Call(Ctl& ctl, const std::string& session,
                  v1::ProfileSessionRequest::Action action, bool clear,
                  v1::ProfileSessionResponse* response) {
  v1::ProfileSessionRequest request;
  request.set_session_id(session);
  request.set_action(action);
  request.set_clear(clear);
  grpc::Status status =
      ctl.admin->ProfileSession(ctl.NewContext().get(), request, response);
  return status.ok() ? absl::OkStatus()
                     : ctl.RpcError("ProfileSession", status);
}

}  // namespace

absl::Status RunProfile(Ctl& ctl, Args args) {
  const std::string& session = args[0];
  v1::ProfileSessionResponse started;
  if (absl::Status s =
          Call(ctl, session, v1::ProfileSessionRequest::START, false, &started);
      !s.ok()) {
    return s;
  }
  // The profiling window itself (not a synchronisation).
  absl::SleepFor(ctl.duration);
  // If the session's own client was profiling, leave its switch and its
  // records alone: read them without stopping or clearing.
  const bool shared = started.was_enabled();
  v1::ProfileSessionResponse done;
  if (absl::Status s = Call(ctl, session,
                            shared ? v1::ProfileSessionRequest::FETCH
                                   : v1::ProfileSessionRequest::STOP,
                            !shared, &done);
      !s.ok()) {
    return s;
  }
  const v1::Profile& profile = done.profile();
  if (!ctl.output.empty()) {
    std::ofstream file(ctl.output);
    file << ProfileTraceJson(profile, session) << "\n";
    if (!file.good()) {
      return absl::UnavailableError(
          absl::StrCat("cannot write the trace to ", ctl.output));
    }
  }
  if (ctl.json) {
    *ctl.out << ProfileJson(profile) << "\n";
    return absl::OkStatus();
  }
  if (shared) {
    *ctl.out << "note: the session's client was already profiling; its "
                "records since then are included and were left in place\n";
  }
  *ctl.out << FormatProfile(profile, ctl.top);
  if (!ctl.output.empty()) {
    *ctl.out << "trace written to " << ctl.output
             << " (chrome://tracing or ui.perfetto.dev)\n";
  }
  return absl::OkStatus();
}

}  // namespace tensorctl
}  // namespace tensord

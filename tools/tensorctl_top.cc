// `tensorctl top`: fetches a frame (ServerInfo, MemoryStats, ListSessions)
// every --interval and repaints it, like top(1). On a terminal it clears the
// screen between frames; otherwise (a pipe, a script) frames follow one
// another separated by a blank line, or one JSON object per line under
// --json. --iterations=N stops after N frames. The sleep is the refresh
// period of a UI, not a synchronisation.
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/tensorctl_commands.h"
#include "tools/tensorctl_top_view.h"

namespace tensord {
namespace tensorctl {
namespace {

absl::Status FetchFrame(Ctl& ctl, TopFrame* frame) {
  frame->address = ctl.address;
  frame->time = absl::Now();
  grpc::Status status = ctl.admin->ServerInfo(
      ctl.NewContext().get(), v1::ServerInfoRequest(), &frame->info);
  if (!status.ok()) return ctl.RpcError("ServerInfo", status);
  status = ctl.admin->MemoryStats(ctl.NewContext().get(),
                                  v1::MemoryStatsRequest(), &frame->memory);
  if (!status.ok()) return ctl.RpcError("MemoryStats", status);
  status = ctl.admin->ListSessions(ctl.NewContext().get(),
                                   v1::ListSessionsRequest(), &frame->sessions);
  if (!status.ok()) return ctl.RpcError("ListSessions", status);
  return absl::OkStatus();
}

}  // namespace

absl::Status RunTop(Ctl& ctl, Args) {
  if (ctl.iterations < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--iterations must be >= 0 (0: until interrupted), not ",
                     ctl.iterations));
  }
  if (ctl.interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--interval must be positive, e.g. --interval=1s, not ",
                     absl::FormatDuration(ctl.interval)));
  }
  for (int i = 0; ctl.iterations == 0 || i < ctl.iterations; ++i) {
    if (i > 0) absl::SleepFor(ctl.interval);
    TopFrame frame;
    if (absl::Status s = FetchFrame(ctl, &frame); !s.ok()) return s;
    if (ctl.json) {
      *ctl.out << TopFrameJson(frame) << "\n";
    } else if (ctl.clear_screen) {
      *ctl.out << kClearScreen << FormatTopFrame(frame);
    } else {
      *ctl.out << (i > 0 ? "\n" : "") << FormatTopFrame(frame);
    }
    ctl.out->flush();
  }
  return absl::OkStatus();
}

}  // namespace tensorctl
}  // namespace tensord

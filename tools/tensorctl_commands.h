// tensorctl's subcommands: one row per command in an explicit table
// (kSubcommands in tensorctl_commands.cc). To add one (memory, segments,
// snapshot, empty-cache, top, profile), write `absl::Status RunFoo(Ctl&, args)`
// in its own tools/tensorctl_foo.cc, declare it below, and add a row. Flags
// shared by several commands (--device, -o, --interval, --iterations) are
// parsed in tensorctl.cc and reach the commands through Ctl.
#ifndef TENSORD_TOOLS_TENSORCTL_COMMANDS_H_
#define TENSORD_TOOLS_TENSORCTL_COMMANDS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "proto/admin.grpc.pb.h"

namespace tensord {
namespace tensorctl {

// What every subcommand gets: the Admin stub and how to print.
struct Ctl {
  std::string address;
  std::string token;
  bool json = false;
  absl::Duration timeout = absl::Seconds(10);
  std::string device;  // --device: empty means every device (memory,
                       // empty-cache) or the default one (segments, snapshot)
  std::string output;  // snapshot's -o FILE ("-": stdout)
  absl::Duration interval = absl::Seconds(1);  // top's refresh period
  int iterations = 0;         // top's refreshes; 0: until interrupted
  bool clear_screen = false;  // top repaints with ANSI codes (a terminal)
  absl::Duration duration = absl::Seconds(5);  // profile's window
  int top = 20;                                // profile's table rows (0: all)
  uint64_t max_entries = 0;  // memory-history on: events per device
  std::string reason;  // kill's --reason, shown to the killed client
  std::unique_ptr<v1::Admin::Stub> admin;
  std::ostream* out = nullptr;

  // A context with the bearer token and the deadline set.
  std::unique_ptr<grpc::ClientContext> NewContext() const;
  // A failed RPC as a Status whose message is ready for the user
  // ("cannot reach tensord at ADDR: ...").
  absl::Status RpcError(absl::string_view what,
                        const grpc::Status& status) const;
};

using Args = absl::Span<const std::string>;

struct Subcommand {
  const char* name;
  const char* usage;    // arguments, e.g. "SESSION"
  const char* summary;  // one line for --help
  int min_args;
  int max_args;
  absl::Status (*run)(Ctl& ctl, Args args);
};

// The dispatch table, in --help order.
absl::Span<const Subcommand> Subcommands();
const Subcommand* FindSubcommand(absl::string_view name);
// The usage text listing every subcommand.
std::string UsageText();

absl::Status RunDevices(Ctl& ctl, Args args);
absl::Status RunSessions(Ctl& ctl, Args args);
absl::Status RunInfo(Ctl& ctl, Args args);
absl::Status RunKill(Ctl& ctl, Args args);
// tensorctl_memory.cc
absl::Status RunMemory(Ctl& ctl, Args args);
absl::Status RunSegments(Ctl& ctl, Args args);
absl::Status RunSnapshot(Ctl& ctl, Args args);
absl::Status RunEmptyCache(Ctl& ctl, Args args);
absl::Status RunMemoryHistory(Ctl& ctl, Args args);
// tensorctl_top.cc
absl::Status RunTop(Ctl& ctl, Args args);
// tensorctl_profile.cc
absl::Status RunProfile(Ctl& ctl, Args args);
// tensorctl_users.cc
absl::Status RunUsers(Ctl& ctl, Args args);

}  // namespace tensorctl
}  // namespace tensord

#endif  // TENSORD_TOOLS_TENSORCTL_COMMANDS_H_

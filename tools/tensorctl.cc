// tensorctl: the operator's CLI for a tensord daemon (Admin service).
//
//   tensorctl devices | sessions | info | users   [--json]
//   tensorctl kill SESSION [--reason TEXT]   [--json]
//   tensorctl memory | segments | empty-cache   [--device D] [--json]
//   tensorctl snapshot -o FILE[.pickle] [--device D]
//   tensorctl memory-history [on|off] [--max_entries N] [--device D]
//   tensorctl top [--interval=1s] [--iterations=N]
//   tensorctl profile SESSION [--duration=5s] [-o trace.json] [--top=N]
//
// Exit status: 0 on success, 1 on any error (message on stderr), 2 on a
// usage error. Subcommands live in an explicit table (tensorctl_commands.h).
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "proto/display_text.h"
#include "server/version.h"
#include "tools/tensorctl_commands.h"

ABSL_FLAG(std::string, server, "",
          "tensord address HOST:PORT (default: $TENSORD_ADDRESS, else "
          "127.0.0.1:50051)");
ABSL_FLAG(std::string, token, "",
          "admin token (default: $TENSORD_ADMIN_TOKEN); sent as "
          "'authorization: Bearer TOKEN'");
ABSL_FLAG(bool, json, false, "print JSON instead of tables");
ABSL_FLAG(int, timeout_s, 10, "seconds to wait for each admin call");
ABSL_FLAG(std::string, device, "",
          "memory, empty-cache: one device (default: every device); "
          "segments, snapshot: the device (default: the daemon's default)");
ABSL_FLAG(std::string, output, "",
          "snapshot: the file to write (also -o FILE; '-' for stdout); "
          "profile: the Chrome trace to write");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(1),
          "top: time between refreshes; users: the window ops/s is "
          "measured over");
ABSL_FLAG(int, iterations, 0, "top: refreshes before exiting (0: forever)");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(5),
          "profile: how long to record the session's ops");
ABSL_FLAG(int, top, 20, "profile: table rows, largest time first (0: all)");
ABSL_FLAG(uint64_t, max_entries, 0,
          "memory-history on: events kept per device (0: 100000)");
ABSL_FLAG(std::string, reason, "",
          "kill: why (at most 512 bytes); the killed client's error shows it");

namespace {

std::string FromFlagOrEnv(const std::string& flag, const char* env,
                          const char* fallback) {
  if (!flag.empty()) return flag;
  const char* value = std::getenv(env);
  return (value != nullptr && *value != '\0') ? value : fallback;
}

int Fail(const std::string& message, int code = 1) {
  // Note [Client text]: the daemon's errors may quote client text.
  std::cerr << "tensorctl: " << tensord::EscapeClientText(message) << "\n";
  return code;
}

// Spells `-o FILE` / `-o=FILE` as --output for absl's parser, which has no
// short options. The strings live in `storage` for the life of argv.
std::vector<char*> WithShortOptions(int argc, char** argv,
                                    std::vector<std::string>& storage) {
  storage.reserve(argc);
  std::vector<char*> out;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-o") {
      storage.push_back("--output");
    } else if (arg.rfind("-o=", 0) == 0) {
      storage.push_back("--output=" + arg.substr(3));
    } else {
      out.push_back(argv[i]);
      continue;
    }
    out.push_back(storage.back().data());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using tensord::tensorctl::Ctl;
  using tensord::tensorctl::FindSubcommand;
  using tensord::tensorctl::Subcommand;
  absl::SetProgramUsageMessage(tensord::tensorctl::UsageText());
  absl::FlagsUsageConfig usage;  // --version: Note [Version] (server/BUILD)
  usage.version_string = [] {
    return absl::StrCat("tensorctl ", tensord::kServerVersion, "\n");
  };
  absl::SetFlagsUsageConfig(usage);
  std::vector<std::string> storage;
  std::vector<char*> args_in = WithShortOptions(argc, argv, storage);
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(args_in.size()), args_in.data());
  if (positional.size() < 2) {
    std::cerr << tensord::tensorctl::UsageText();
    return 2;
  }
  const std::string name = positional[1];
  if (name == "help") {
    std::cout << tensord::tensorctl::UsageText();
    return 0;
  }
  const Subcommand* command = FindSubcommand(name);
  if (command == nullptr) {
    return Fail(absl::StrCat("unknown command '", name,
                             "'; run 'tensorctl help' for the list"),
                2);
  }
  std::vector<std::string> args(positional.begin() + 2, positional.end());
  const int n = static_cast<int>(args.size());
  if (n < command->min_args || n > command->max_args) {
    return Fail(absl::StrCat("usage: tensorctl ", command->name,
                             command->usage[0] ? " " : "", command->usage),
                2);
  }

  Ctl ctl;
  ctl.address = FromFlagOrEnv(absl::GetFlag(FLAGS_server), "TENSORD_ADDRESS",
                              "127.0.0.1:50051");
  ctl.token =
      FromFlagOrEnv(absl::GetFlag(FLAGS_token), "TENSORD_ADMIN_TOKEN", "");
  ctl.json = absl::GetFlag(FLAGS_json);
  ctl.timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout_s));
  ctl.device = absl::GetFlag(FLAGS_device);
  ctl.output = absl::GetFlag(FLAGS_output);
  ctl.interval = absl::GetFlag(FLAGS_interval);
  ctl.iterations = absl::GetFlag(FLAGS_iterations);
  ctl.duration = absl::GetFlag(FLAGS_duration);
  ctl.top = absl::GetFlag(FLAGS_top);
  ctl.max_entries = absl::GetFlag(FLAGS_max_entries);
  ctl.reason = absl::GetFlag(FLAGS_reason);
  ctl.clear_screen = isatty(STDOUT_FILENO) != 0;
  ctl.out = &std::cout;
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(64 << 20);  // snapshots can be big
  ctl.admin = tensord::v1::Admin::NewStub(grpc::CreateCustomChannel(
      ctl.address, grpc::InsecureChannelCredentials(), channel_args));

  absl::Status status = command->run(ctl, args);
  if (!status.ok()) return Fail(std::string(status.message()));
  return 0;
}

// libFuzzer target: arbitrary bytes as the daemon's --listen address (the
// --insecure loopback check) and as --unix_socket_mode
// (server/listen_address.h). Oracles: a parsed mode is at most 0777; an
// address --insecure accepts is a unix: path or names a loopback host;
// nothing crashes or trips a sanitizer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "server/listen_address.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto mode = tensord::ParseSocketMode(text);
  if (mode.ok() && *mode > 0777) std::abort();
  if (tensord::CheckInsecureListen(text).ok()) {
    const bool loopback =
        absl::StartsWith(text, "unix:") || absl::StrContains(text, "127.") ||
        absl::StrContains(text, "::1") ||
        absl::StrContains(absl::AsciiStrToLower(text), "localhost");
    if (!loopback) std::abort();
  }
  return 0;
}

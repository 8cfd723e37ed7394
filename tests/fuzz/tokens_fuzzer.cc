// libFuzzer target: arbitrary bytes as the tokens file (server/auth.h), read
// at startup and on every SIGHUP. Oracles: the parser accepts or names the
// bad line; an accepted table has a name and a token per user and no
// negative quota (an overflowing number is an error, never "no quota");
// nothing crashes or trips a sanitizer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "server/auth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view contents(reinterpret_cast<const char*>(data), size);
  auto parsed = tensord::Authenticator::Parse(contents);
  if (!parsed.ok()) {
    if (!absl::StartsWith(parsed.status().message(), "tokens file line ")) {
      std::abort();
    }
    return 0;
  }
  for (const auto& [token, user] : *parsed) {
    if (token.empty() || user.name.empty() || user.quota_bytes < 0) {
      std::abort();
    }
  }
  return 0;
}

#include "client/options.h"

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace tensord {
inline namespace client {

ClientOptions ResolveOptions(ClientOptions options) {
  if (options.address.empty()) {
    const char* env = std::getenv("TENSORD_ADDRESS");
    options.address = (env != nullptr && *env != '\0') ? env : kDefaultAddress;
  }
  if (options.token.empty()) {
    const char* env = std::getenv("TENSORD_TOKEN");
    if (env != nullptr) options.token = env;
  }
  return options;
}

bool IsSameHostAddress(absl::string_view address) {
  if (absl::StartsWith(address, "unix:") ||
      absl::StartsWith(address, "unix-abstract:")) {
    return true;
  }
  absl::ConsumePrefix(&address, "dns:///");
  absl::ConsumePrefix(&address, "ipv4:");
  absl::ConsumePrefix(&address, "ipv6:");
  return absl::StartsWith(address, "127.") ||
         absl::StartsWith(address, "localhost:") || address == "localhost" ||
         absl::StartsWith(address, "[::1]");
}

}  // namespace client
}  // namespace tensord

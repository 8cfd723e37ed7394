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

namespace {

bool IsUnixAddress(absl::string_view address) {
  return absl::StartsWith(address, "unix:") ||
         absl::StartsWith(address, "unix-abstract:");
}

// `address` without its gRPC resolver scheme.
absl::string_view WithoutScheme(absl::string_view address) {
  absl::ConsumePrefix(&address, "dns:///");
  absl::ConsumePrefix(&address, "ipv4:");
  absl::ConsumePrefix(&address, "ipv6:");
  return address;
}

}  // namespace

bool IsSameHostAddress(absl::string_view address) {
  if (IsUnixAddress(address)) return true;
  address = WithoutScheme(address);
  return absl::StartsWith(address, "127.") ||
         absl::StartsWith(address, "localhost:") || address == "localhost" ||
         absl::StartsWith(address, "[::1]");
}

std::string TcpHostOf(absl::string_view address) {
  if (IsUnixAddress(address)) return "";
  address = WithoutScheme(address);
  const size_t colon = address.rfind(':');
  if (colon == address.npos || address.find('/') != address.npos) return "";
  absl::string_view host = address.substr(0, colon);
  if (absl::ConsumePrefix(&host, "[") && !absl::ConsumeSuffix(&host, "]")) {
    return "";
  }
  return std::string(host);
}

bool WantShm(const ClientOptions& options) {
  switch (options.shm) {
    case ClientOptions::ShmMode::kOff:
      return false;
    case ClientOptions::ShmMode::kOn:
      return true;
    case ClientOptions::ShmMode::kAuto:
      break;
  }
  const char* env = std::getenv("TENSORD_SHM");
  if (env != nullptr && std::string(env) == "0") return false;
  return IsSameHostAddress(options.address);
}

}  // namespace client
}  // namespace tensord

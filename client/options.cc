#include "client/options.h"

#include <cstdlib>

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

}  // namespace client
}  // namespace tensord

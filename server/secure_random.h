// Secrets from the kernel's CSPRNG: session ids, resume secrets, bulk-socket
// tokens, shared-memory region nonces. getrandom(2) only; there is no
// fallback to a weaker generator: a failure is an error the caller reports
// (the daemon checks once at start that the kernel answers). Thread-safe.
#ifndef TENSORD_SERVER_SECURE_RANDOM_H_
#define TENSORD_SERVER_SECURE_RANDOM_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace tensord {

// `n` random bytes; UNAVAILABLE if the kernel cannot supply them.
absl::StatusOr<std::string> SecureRandomBytes(size_t n);
// `n` random bytes as 2n lowercase hex digits.
absl::StatusOr<std::string> SecureRandomHex(size_t n);

}  // namespace tensord

#endif  // TENSORD_SERVER_SECURE_RANDOM_H_

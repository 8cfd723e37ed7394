#include "server/secure_random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace tensord {

absl::StatusOr<std::string> SecureRandomBytes(size_t n) {
  std::string out(n, '\0');
  size_t filled = 0;
  while (filled < n) {
    // Flags 0: the urandom pool, blocking only until the kernel seeded it
    // (early boot), never a non-cryptographic source.
    const ssize_t got = getrandom(out.data() + filled, n - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat(
          "getrandom failed (", std::strerror(errno),
          "): tensord makes its secrets from the kernel's CSPRNG only"));
    }
    filled += static_cast<size_t>(got);
  }
  return out;
}

absl::StatusOr<std::string> SecureRandomHex(size_t n) {
  absl::StatusOr<std::string> bytes = SecureRandomBytes(n);
  if (!bytes.ok()) return bytes.status();
  return absl::BytesToHexString(*bytes);
}

}  // namespace tensord

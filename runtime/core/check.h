// TD_CHECK: invariants whose violation is a tensord bug (never user input).
// The Abseil in Debian 12 predates absl/log, so this is the project's CHECK.
#ifndef TENSORD_RUNTIME_CORE_CHECK_H_
#define TENSORD_RUNTIME_CORE_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define TD_CHECK(cond, msg)                                           \
  do {                                                                \
    if (!(cond)) {                                                    \
      std::fprintf(stderr, "%s:%d: check failed: %s: %s\n", __FILE__, \
                   __LINE__, #cond, msg);                             \
      std::abort();                                                   \
    }                                                                 \
  } while (0)

#endif  // TENSORD_RUNTIME_CORE_CHECK_H_

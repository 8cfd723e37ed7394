#include "runtime/core/transfer_buffers.h"

#include <cstdlib>
#include <initializer_list>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tensord {

bool KeepTransferBuffersMapped(size_t mmap_threshold, size_t trim_threshold) {
#if defined(__GLIBC__)
  for (const char* name :
       {"GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"}) {
    if (std::getenv(name) != nullptr) return false;
  }
  // mallopt takes the mutex of the main arena: safe from any thread.
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_threshold)) == 1 &&
         mallopt(M_TRIM_THRESHOLD, static_cast<int>(trim_threshold)) == 1;
#else
  (void)mmap_threshold;
  (void)trim_threshold;
  return false;
#endif
}

void ReturnFreeHeapMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace tensord

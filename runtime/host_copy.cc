#include "runtime/host_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/parallel.h"

namespace tensord {

void ForEachCopyRange(size_t bytes,
                      const std::function<void(size_t, size_t)>& copy) {
  if (bytes < kParallelCopyBytes || cpu::NumThreads() == 1) {
    if (bytes > 0) copy(0, bytes);
    return;
  }
  // 1 MiB units, each worth a full grain: ParallelFor gives every thread a
  // contiguous share.
  constexpr size_t kUnit = size_t{1} << 20;
  const int64_t units = static_cast<int64_t>((bytes + kUnit - 1) / kUnit);
  cpu::ParallelFor(units, cpu::kParallelGrain, [&](int64_t begin, int64_t end) {
    copy(static_cast<size_t>(begin) * kUnit,
         std::min(bytes, static_cast<size_t>(end) * kUnit));
  });
}

void CopyHostBytes(void* dst, const void* src, size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  ForEachCopyRange(bytes, [&](size_t from, size_t to) {
    std::memcpy(d + from, s + from, to - from);
  });
}

}  // namespace tensord

// Counter-based random numbers (Philox4x32-10), so that a (seed, offset) pair
// gives the same values on every device and any thread split.
#ifndef TENSORD_KERNELS_CPU_RANDOM_H_
#define TENSORD_KERNELS_CPU_RANDOM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

enum class Distribution { kUniform, kNormal };

// Fills a contiguous `out` (float32/float64) from the Philox stream keyed by
// `seed`, starting at counter `offset` (one counter per 4 values).
absl::Status FillRandom(Distribution dist, uint64_t seed, uint64_t offset,
                        const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_RANDOM_H_

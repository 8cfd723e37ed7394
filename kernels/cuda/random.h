// Counter-based random numbers on CUDA: the Philox4x32-10 scheme of
// kernels/cpu/random.h (one counter per 4 values from `offset`, keyed by
// `seed`), so a (seed, offset) pair gives the same uniform values as the CPU
// bit for bit, and normal values equal up to the last ulp of the device's
// double log/sin/cos. Plain C++ header; asynchronous on `stream`.
#ifndef TENSORD_KERNELS_CUDA_RANDOM_H_
#define TENSORD_KERNELS_CUDA_RANDOM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

// Same order as cpu::Distribution.
enum class Distribution { kUniform, kNormal };

// Fills a contiguous float32/float64 `out`.
absl::Status FillRandom(Distribution dist, uint64_t seed, uint64_t offset,
                        const StridedView& out, StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_RANDOM_H_

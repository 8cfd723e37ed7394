// CUDA neural-network kernels with the contracts of kernels/cpu/nn.h.
// Plain C++ header; asynchronous on `stream`.
#ifndef TENSORD_KERNELS_CUDA_NN_H_
#define TENSORD_KERNELS_CUDA_NN_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

// Softmax (or log-softmax) over the middle dim of a contiguous
// [outer, dim, inner] float32/float64 `in` into a contiguous `out`;
// max-subtracted, accumulating in the element type (as PyTorch on CUDA).
absl::Status Softmax(const StridedView& in, int64_t outer, int64_t dim,
                     int64_t inner, bool log, const StridedView& out,
                     StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_NN_H_

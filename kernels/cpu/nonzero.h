// nonzero_static: the coordinates of the nonzero elements of a tensor, in
// row-major order, into an output whose row count the caller chose (PyTorch's
// torch.nonzero_static). Data-dependent sizes stay out of the daemon: a
// client that wants every coordinate (nonzero, masked_select) reads the
// count first and passes it as the size.
#ifndef TENSORD_KERNELS_CPU_NONZERO_H_
#define TENSORD_KERNELS_CPU_NONZERO_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// out ([size, in.ndim], int64, C-contiguous) = the coordinates of the first
// `size` nonzero elements of `in` (C-contiguous, any dtype; NaN is nonzero),
// one row each in row-major order; rows past the last nonzero element hold
// `fill_value` in every column.
absl::Status NonzeroStatic(const StridedView& in, int64_t fill_value,
                           const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_NONZERO_H_

// Kernels along one dim: sort (values and indices), cumulative sums and
// products, and multinomial sampling.
//
// Contract: every view is C-contiguous and seen as [outer, size, inner]
// around `dim` (0-d views count as [1]); index outputs are int64. The
// sampling kernel checks its probabilities (they are data) before it
// writes anything.
#ifndef TENSORD_KERNELS_CPU_SORT_H_
#define TENSORD_KERNELS_CPU_SORT_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// values/indices = in sorted along dim, stably (equal elements keep their
// order); NaN sorts above every number, as in PyTorch.
absl::Status Sort(const StridedView& in, int dim, bool descending,
                  const StridedView& values, const StridedView& indices);

// out = running sum (or product) of in along dim; in and out have one dtype.
absl::Status CumScan(const StridedView& in, int dim, bool product,
                     const StridedView& out);

// out[r, s] = the category drawn for row r by uniform u[r, s] in [0, 1)
// from the weights probs[r, :] (float32/float64, [rows, n]); without
// replacement a drawn category's weight is then zero for the row's later
// draws. INVALID_ARGUMENT for negative, non-finite or all-zero weights.
absl::Status Multinomial(const StridedView& probs, const StridedView& u,
                         bool replacement, const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_SORT_H_

// Kernels along one dim: sort (values and indices), cumulative sums and
// products, cummax/cummin, logcumsumexp, mode,
// searchsorted, and multinomial sampling. The per-element rules they share
// with the CUDA kernels are runtime/core/scan_math.h's.
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

// indices (in's shape with dim's size k) = the positions of the k largest
// (smallest unless `largest`) entries of each row along dim, in the order
// Sort's stable order gives them (NaN largest; ties by position): topk's
// indices without sorting the whole row. 0 <= k <= the dim's size.
absl::Status TopKIndices(const StridedView& in, int dim, int64_t k,
                         bool largest, const StridedView& indices);

// out = running sum (or product) of in along dim; in and out have one dtype.
absl::Status CumScan(const StridedView& in, int dim, bool product,
                     const StridedView& out);

// values/indices = the running maximum (max) or minimum of in along dim and
// the index it was taken from (cummax/cummin): ties take the later index, a
// NaN takes over (scan::TakesOver). Every dtype of DispatchAll.
absl::Status CumExtreme(const StridedView& in, int dim, bool max,
                        const StridedView& values, const StridedView& indices);

// out = log(cumsum(exp(in))) along dim, accumulated in double by
// scan::LogAddExp (PyTorch's: -inf stays -inf, NaN propagates); float32 and
// float64.
absl::Status LogCumSumExp(const StridedView& in, int dim,
                          const StridedView& out);

// The mode of each row along dim: values and indices have in's shape with
// dim's size 1 (keepdim); rows are not empty. PyTorch's CPU algorithm
// exactly (Note [Mode ties]): the row's (value, position) pairs sorted by
// value with std::sort, then scan::ModeOfSortedRow's rule.
absl::Status Mode(const StridedView& in, int dim, const StridedView& values,
                  const StridedView& indices);

// out (int64 or int32, values' shape) = where each of `values` goes in the
// matching row of `boundaries` ([..., n]: the row of the value's leading
// indices; one row for every value when boundaries is 1-d) to keep it
// sorted: the first position whose boundary is >= the value (> with
// right). boundaries and values have one dtype (DispatchAll's, bool aside).
absl::Status SearchSorted(const StridedView& boundaries,
                          const StridedView& values, bool right,
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

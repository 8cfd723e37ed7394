// Indexing kernels on contiguous tensors: index_select, gather, scatter,
// scatter_reduce.
//
// Contract: every view is C-contiguous; index tensors are int64. Index
// values are data, so they are checked here (before anything is written):
// an out-of-range index is INVALID_ARGUMENT naming it.
#ifndef TENSORD_KERNELS_CPU_INDEX_H_
#define TENSORD_KERNELS_CPU_INDEX_H_

#include "absl/status/status.h"
#include "runtime/core/kernel_ops.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// out[o, j, i] = in[o, index[j], i] with in seen as [outer, size, inner].
absl::Status IndexSelect(const StridedView& in, int dim,
                         const StridedView& index, const StridedView& out);

// out[p] = in[p with p[dim] = index[p]]; out has index's shape.
absl::Status Gather(const StridedView& in, int dim, const StridedView& index,
                    const StridedView& out);

// out[p with p[dim] = index[p]] (+)= src[p] for p over index's shape; out
// already holds the values of self.
absl::Status Scatter(const StridedView& out, int dim, const StridedView& index,
                     const StridedView& src, bool add);

// Note [Row scatter_add]: out[index[i], :] += src[i, :] for i < n, out [V,
// D] and src [n, D] contiguous float32/float64, index's n entries `stride`
// apart (the column an expanded [n, D] index repeats: index_select's
// gradient along dim 0, an embedding's, which built that index contiguous
// and scattered element by element). Negative entries count from the end;
// an entry out of [-V, V) is INVALID_ARGUMENT (Scatter's message), checked
// before anything is written. Serial in row order, as Scatter.
absl::Status ScatterAddRows(const StridedView& out, const int64_t* index,
                            int64_t stride, int64_t n, const StridedView& src);

// torch.scatter_reduce on `out`, which already holds self's values: for p
// over index's shape, out[p with p[dim] = index[p]] is reduced with src[p]
// by op (kSum, kProd, kMean, kMax = amax, kMin = amin); without include_self
// the positions some index names start from the reduction's identity (mean:
// their count excludes self), and positions no index names keep self. amax/
// amin propagate NaN; integer means divide with floor, as PyTorch; bool
// sums/amax are `or`, prods/amin `and` (no bool mean). Negative indices are
// refused (INVALID_ARGUMENT naming `what`, dim and the index). Serial in
// index order: deterministic.
absl::Status ScatterReduce(const StridedView& out, int dim,
                           const StridedView& index, const StridedView& src,
                           ReduceOp op, bool include_self, const char* what);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_INDEX_H_

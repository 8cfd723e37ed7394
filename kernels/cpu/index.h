// Indexing kernels on contiguous tensors: index_select, gather, scatter.
//
// Contract: every view is C-contiguous; index tensors are int64. Index
// values are data, so they are checked here (before anything is written):
// an out-of-range index is INVALID_ARGUMENT naming it.
#ifndef TENSORD_KERNELS_CPU_INDEX_H_
#define TENSORD_KERNELS_CPU_INDEX_H_

#include "absl/status/status.h"
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

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_INDEX_H_

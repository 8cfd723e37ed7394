// Argument checks the index rows share (index_ops.cc, scatter_reduce_ops.cc).
// Shapes only: index values are data, checked by the kernels.
#ifndef TENSORD_RUNTIME_OPS_INDEX_CHECKS_H_
#define TENSORD_RUNTIME_OPS_INDEX_CHECKS_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"
#include "runtime/tensor.h"

namespace tensord {

// INVALID_ARGUMENT naming `what` unless t is int64.
absl::Status RequireInt64(const Tensor& t, const char* what);

// gather/scatter: index has input's rank and fits it outside dim d (d = -1:
// in every dim). An empty index is not checked (as ATen's
// gather_shape_check/scatter_shape_check): gather's result is then empty in
// the index's shape, scatter's the input.
absl::Status CheckIndexShape(const Tensor& self, const Tensor& index, int d,
                             const char* what);

// A 0-d view as [1], so the kernels see a dim to index along.
StridedView AtLeast1d(StridedView v);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_INDEX_CHECKS_H_

// The fused cross entropy rows' geometry from their inputs and attributes,
// checked (cross_entropy_ops.cc): the CPU rows' inference and both devices'
// kernels read it. Private to the op table library.
#ifndef TENSORD_RUNTIME_OPS_CROSS_ENTROPY_GEOMETRY_H_
#define TENSORD_RUNTIME_OPS_CROSS_ENTROPY_GEOMETRY_H_

#include "absl/status/statusor.h"
#include "runtime/core/kernel_ops.h"
#include "runtime/ops/attrs.h"
#include "runtime/tensor.h"

namespace tensord {

// Logits `x` seen as [N, C, S] with int64 class indices `target` [N, S]
// (S: the dims after the class dim); `op` names the row in errors.
absl::StatusOr<CrossEntropyGeometry> CrossEntropyGeometryOf(
    const Tensor& x, const Tensor& target, const Attrs& attrs, const char* op);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_CROSS_ENTROPY_GEOMETRY_H_

// Helpers shared by the LAPACK rows (lapack_ops.cc, lapack_spectral_ops.cc,
// lapack_qr_ops.cc, lapack_matrix_ops.cc):
// validation worded as ATen's, shapes of matrix stacks, info checks and the
// row shorthand. Internal to runtime/ops.
#ifndef TENSORD_RUNTIME_OPS_LAPACK_ROWS_H_
#define TENSORD_RUNTIME_OPS_LAPACK_ROWS_H_

#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/ops/op_def.h"

namespace tensord {
namespace lapack_rows {

// OK for a float tensor of two or more dims (square with `square`).
absl::Status RequireMatrices(const Tensor& t, const char* op, bool square);
// The batch dims of a matrix stack, `s` with `tail` appended, and the
// matrices' rows and columns.
Shape Batch(const Tensor& t);
Shape With(Shape s, std::initializer_list<int64_t> tail);
int64_t Rows(const Tensor& t);
int64_t Cols(const Tensor& t);
// INVALID_ARGUMENT naming the first failing matrix of `info` (int32), for
// the check_errors=True calls (`what` ends where the info value goes).
absl::Status CheckInfo(const Tensor& info, const std::string& what);
// `t` broadcast to `shape` as a contiguous tensor (a copy unless it is one).
absl::StatusOr<Tensor> ExpandContiguous(const Tensor& t, const Shape& shape,
                                        const OpContext& ctx);
// `t` (contiguous) seen with `shape` of the same element count.
Tensor Reshaped(const Tensor& t, const Shape& shape);
// An optional bool attribute.
AttrSpec Flag(const char* name, bool value);
// A compute row of fixed arity, not differentiable natively.
OpDef Row(const char* name, int inputs, int outputs,
          std::vector<AttrSpec> attrs, const char* doc, InferFn infer,
          KernelFn cpu, std::vector<OpExample> examples);

}  // namespace lapack_rows
}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_LAPACK_ROWS_H_

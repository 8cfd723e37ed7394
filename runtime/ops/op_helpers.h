// Small helpers shared by the op families' rows (infer functions mostly).
#ifndef TENSORD_RUNTIME_OPS_OP_HELPERS_H_
#define TENSORD_RUNTIME_OPS_OP_HELPERS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/ops/op_def.h"

namespace tensord {

// Attribute spec shorthands for table rows.
AttrSpec Required(std::string name, AttrType type);
AttrSpec Optional(std::string name, AttrType type, AttrValue default_value);
// The usual trailing attributes of creation ops: dtype (default float32
// unless given) and device ("" = the session default).
std::vector<AttrSpec> CreationAttrs(std::vector<AttrSpec> leading,
                                    DType default_dtype = kDefaultFloat);

// The device named by attribute "device" ("" = ctx.device).
absl::StatusOr<Device*> ResolveDevice(const Attrs& attrs, const OpContext& ctx);

// PyTorch's result_type: 0-dim operands, and below them wrapped numbers
// (client scalars), only raise the category (bool < integral < floating); a
// wrapped float raises it to the default float type, whatever its width.
DType ResultType(absl::Span<const Tensor> inputs);

// A creation op's scalar in `dtype`, as PyTorch converts it before computing
// values (arange's start and step, linspace's start and end): truncated
// toward zero for integer and bool dtypes. arange's length still comes from
// the double bounds (PyTorch 2.x; 1.13 truncated first): arange(0.5, 3.1,
// 0.7, dtype=int64) is [0, 0, 0, 0].
double IntegralScalar(DType dtype, double v);

// Shape from an "ints" attribute, validated (no negatives, no overflow).
absl::StatusOr<Shape> ShapeAttr(const Attrs& attrs, const std::string& name,
                                DType dtype);

// A row with the common fields set (differentiable by default); callers set
// infer+cpu, view or composite, and examples.
OpDef MakeOp(std::string name, int min_inputs, int max_inputs,
             std::vector<AttrSpec> attrs, std::string doc);

// An example call: input shapes (float32) and attributes.
OpExample Example(std::vector<Shape> shapes,
                  std::map<std::string, AttrValue> attrs = {},
                  std::vector<DType> dtypes = {});

// Errors for the common validations, worded as PyTorch's.
absl::Status RequireFloating(const Tensor& t, const std::string& what);
absl::Status RequireDim(const Tensor& t, int ndim, const std::string& what);
// Input `index` (`arg`) of `op` has no derivative (cross_entropy's class
// weights: PyTorch refuses them requiring grad too).
absl::Status NotDifferentiable(const std::string& op, const std::string& arg,
                               int index);

// OK when input `index` of `op` is `dtype` with `shape`, else an error naming
// both (a fused backward's saved statistics).
absl::Status RequireInput(const std::string& op, int index, const Tensor& t,
                          DType dtype, const Shape& shape);

// The dim of a one-dim op (attribute "dim", wrapped): a 0-d tensor takes
// dim 0 or -1, as in PyTorch.
absl::StatusOr<int> OneDim(const Tensor& t, const Attrs& attrs);

// Normalised, de-duplicated reduction dims from attribute "dim" ([] = all).
absl::StatusOr<std::vector<bool>> ReducedDims(const Attrs& attrs, int rank);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_OP_HELPERS_H_

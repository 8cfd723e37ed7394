// View ops: outputs alias their input's storage (reshape copies only when
// no view can express the new shape, as in PyTorch).
#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

// Resolves one -1 in `requested` against `numel`.
absl::StatusOr<Shape> InferReshape(const Tensor& t,
                                   const std::vector<int64_t>& requested) {
  Shape shape(requested.begin(), requested.end());
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0) {
        return absl::InvalidArgumentError("only one dimension can be inferred");
      }
      infer_at = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid shape dimension ", shape[i]));
    } else {
      known *= shape[i];
    }
  }
  const int64_t numel = t.numel();
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape '", ShapeToString(requested),
                       "' is invalid for input of size ", numel));
    }
    shape[infer_at] = numel / known;
  }
  TD_RETURN_IF_ERROR(CheckShape(shape, ItemSize(t.dtype())));
  if (NumElements(shape) != numel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shape '", ShapeToString(requested), "' is invalid for input of size ",
        numel));
  }
  return shape;
}

absl::StatusOr<std::vector<Tensor>> Reshape(absl::Span<const Tensor> in,
                                            const Attrs& attrs,
                                            const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Shape shape, InferReshape(in[0], attrs.Ints("shape")));
  TD_ASSIGN_OR_RETURN(Tensor base, Contiguous(in[0], ctx));
  return std::vector<Tensor>{
      base.AsStrided(shape, ContiguousStrides(shape), base.offset())};
}

absl::StatusOr<std::vector<Tensor>> Transpose(absl::Span<const Tensor> in,
                                              const Attrs& attrs,
                                              const OpContext&) {
  const Tensor& t = in[0];
  TD_ASSIGN_OR_RETURN(int d0, WrapDim(attrs.Int("dim0"), t.ndim()));
  TD_ASSIGN_OR_RETURN(int d1, WrapDim(attrs.Int("dim1"), t.ndim()));
  if (t.ndim() == 0) return std::vector<Tensor>{t};
  Shape shape = t.shape();
  Strides strides = t.strides();
  std::swap(shape[d0], shape[d1]);
  std::swap(strides[d0], strides[d1]);
  return std::vector<Tensor>{t.AsStrided(shape, strides, t.offset())};
}

}  // namespace

std::vector<OpDef> ViewOps() {
  std::vector<OpDef> ops;
  OpDef reshape;
  reshape.name = "reshape";
  reshape.min_inputs = reshape.max_inputs = 1;
  reshape.attrs = {Required("shape", AttrType::kInts)};
  reshape.view = Reshape;
  reshape.differentiable = true;
  reshape.doc = "The same data with a new shape (one dim may be -1).";
  ops.push_back(std::move(reshape));
  OpDef transpose;
  transpose.name = "transpose";
  transpose.min_inputs = transpose.max_inputs = 1;
  transpose.attrs = {Required("dim0", AttrType::kInt),
                     Required("dim1", AttrType::kInt)};
  transpose.view = Transpose;
  transpose.differentiable = true;
  transpose.doc = "Swaps dims dim0 and dim1 (a view).";
  ops.push_back(std::move(transpose));
  return ops;
}

}  // namespace tensord

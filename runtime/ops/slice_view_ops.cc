// The indexing views: narrow, select and slice, each a strided window onto
// one dim of its input's storage. Every function checks its arguments
// before building the view (Note [Infer before compute]). ViewOps lists
// these rows last.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"
#include "runtime/ops/view_row.h"

namespace tensord {
namespace {

using Views = absl::StatusOr<std::vector<Tensor>>;

// Elements [start, start + step * length) of dim d, by step.
Tensor SliceOf(const Tensor& t, int d, int64_t start, int64_t length,
               int64_t step) {
  Shape shape = t.shape();
  Strides strides = t.strides();
  shape[d] = length;
  const int64_t offset = t.offset() + (length > 0 ? start * strides[d] : 0);
  strides[d] *= step;
  return t.AsStrided(shape, strides, offset);
}

absl::Status NeedsDims(const Tensor& t, const char* what) {
  if (t.ndim() > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, "() cannot be applied to a 0-dim tensor."));
}

Views Narrow(absl::Span<const Tensor> in, const Attrs& attrs,
             const OpContext&) {
  const Tensor& t = in[0];
  TD_RETURN_IF_ERROR(NeedsDims(t, "narrow"));
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), t.ndim()));
  const int64_t size = t.shape()[d];
  int64_t start = attrs.Int("start");
  const int64_t length = attrs.Int("length");
  if (start < -size || start > size) {
    return absl::InvalidArgumentError(
        absl::StrCat("start out of range (expected to be in range of [", -size,
                     ", ", size, "], but got ", start, ")"));
  }
  if (start < 0) start += size;
  if (length < 0 || start > size - length) {
    return absl::InvalidArgumentError(
        absl::StrCat("start (", start, ") + length (", length,
                     ") exceeds dimension size (", size, ")."));
  }
  return One(SliceOf(t, d, start, length, 1));
}

Views Select(absl::Span<const Tensor> in, const Attrs& attrs,
             const OpContext&) {
  const Tensor& t = in[0];
  TD_RETURN_IF_ERROR(NeedsDims(t, "select"));
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), t.ndim()));
  const int64_t size = t.shape()[d];
  int64_t index = attrs.Int("index");
  if (index < -size || index >= size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "select(): index ", index, " out of range for tensor of size ",
        ShapeToString(t.shape()), " at dimension ", d));
  }
  if (index < 0) index += size;
  Shape shape = t.shape();
  Strides strides = t.strides();
  const int64_t offset = t.offset() + index * strides[d];
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return One(t.AsStrided(shape, strides, offset));
}

Views Slice(absl::Span<const Tensor> in, const Attrs& attrs, const OpContext&) {
  const Tensor& t = in[0];
  TD_RETURN_IF_ERROR(NeedsDims(t, "slice"));
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), t.ndim()));
  const int64_t size = t.shape()[d], step = attrs.Int("step");
  if (step <= 0)
    return absl::InvalidArgumentError("slice step must be positive");
  auto clampi = [size](int64_t v) {
    if (v < 0) v += size;
    return std::min(std::max<int64_t>(v, 0), size);
  };
  const int64_t start = clampi(attrs.Has("start") ? attrs.Int("start") : 0);
  const int64_t end =
      std::max(start, clampi(attrs.Has("end") ? attrs.Int("end") : size));
  // ceil((end - start) / step) without overflow for a huge step; with at
  // most one element the step is irrelevant (and must not scale a stride).
  const int64_t n = end == start ? 0 : 1 + (end - start - 1) / step;
  return One(SliceOf(t, d, start, n, n <= 1 ? 1 : step));
}

}  // namespace

std::vector<OpDef> SliceViewOps() {
  std::vector<OpDef> ops;
  ops.push_back(ViewRow(
      "narrow", Narrow, {IntAttr("dim"), IntAttr("start"), IntAttr("length")},
      "length elements of dim from start (a view).",
      {{"dim", int64_t{1}}, {"start", int64_t{1}}, {"length", int64_t{2}}}));
  ops.push_back(ViewRow("select", Select, {IntAttr("dim"), IntAttr("index")},
                        "The slice at `index` of dim, which is removed.",
                        {{"dim", int64_t{1}}, {"index", int64_t{-1}}}));
  ops.push_back(ViewRow(
      "slice", Slice,
      {IntOr("dim", 0), Optional("start", AttrType::kInt, std::monostate{}),
       Optional("end", AttrType::kInt, std::monostate{}), IntOr("step", 1)},
      "Elements start:end:step of dim (Python slice rules).",
      {{"dim", int64_t{2}}, {"start", int64_t{1}}, {"step", int64_t{2}}}));
  return ops;
}

}  // namespace tensord

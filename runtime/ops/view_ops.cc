// View ops: outputs alias their input's storage (reshape copies only when
// no view can express the new shape, as in PyTorch). Every function checks
// its arguments before building the view (Note [Infer before compute]).
// The indexing views (narrow, select, slice) are in slice_view_ops.cc.
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"
#include "runtime/ops/view_row.h"

namespace tensord {
namespace {

using Views = absl::StatusOr<std::vector<Tensor>>;

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
      if (shape[i] != 0 && known > (int64_t{1} << 62) / shape[i]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "shape '", ShapeToString(requested), "' is too large"));
      }
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
    return absl::InvalidArgumentError(
        absl::StrCat("shape '", ShapeToString(requested),
                     "' is invalid for input of size ", numel));
  }
  return shape;
}

// PyTorch's computeStride: strides viewing `t` as `shape`, if any exist.
std::optional<Strides> ViewStrides(const Tensor& t, const Shape& shape) {
  const Shape& old = t.shape();
  const Strides& os = t.strides();
  if (old.empty()) return Strides(shape.size(), 1);
  if (t.numel() == 0) return ContiguousStrides(shape);
  Strides ns(shape.size());
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t base = os.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old.size()) - 1; d >= 0; --d) {
    tensor_numel *= old[d];
    if (d == 0 || (old[d - 1] != 1 && os[d - 1] != tensor_numel * base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        ns[view_d] = view_numel * base;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        base = os[d - 1];
        tensor_numel = view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return ns;
}

Views Reshape(absl::Span<const Tensor> in, const Attrs& attrs,
              const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Shape shape, InferReshape(in[0], attrs.Ints("shape")));
  if (auto strides = ViewStrides(in[0], shape)) {
    return Views(
        std::vector<Tensor>{in[0].AsStrided(shape, *strides, in[0].offset())});
  }
  TD_ASSIGN_OR_RETURN(Tensor base, Contiguous(in[0], ctx));
  return Views(std::vector<Tensor>{
      base.AsStrided(shape, ContiguousStrides(shape), base.offset())});
}

Views View(absl::Span<const Tensor> in, const Attrs& attrs, const OpContext&) {
  TD_ASSIGN_OR_RETURN(Shape shape, InferReshape(in[0], attrs.Ints("shape")));
  auto strides = ViewStrides(in[0], shape);
  if (!strides) {
    return absl::InvalidArgumentError(absl::StrCat(
        "view size is not compatible with input tensor's size and stride (",
        ShapeToString(in[0].shape()),
        "); at least one dimension spans across two contiguous subspaces. "
        "Use .reshape(...) instead."));
  }
  return Views(
      std::vector<Tensor>{in[0].AsStrided(shape, *strides, in[0].offset())});
}

Views Transpose(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext&) {
  const Tensor& t = in[0];
  TD_ASSIGN_OR_RETURN(int d0, WrapDim(attrs.Int("dim0"), t.ndim()));
  TD_ASSIGN_OR_RETURN(int d1, WrapDim(attrs.Int("dim1"), t.ndim()));
  if (t.ndim() == 0) return One(t);
  Shape shape = t.shape();
  Strides strides = t.strides();
  std::swap(shape[d0], shape[d1]);
  std::swap(strides[d0], strides[d1]);
  return One(t.AsStrided(shape, strides, t.offset()));
}

Views T(absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  const Tensor& t = in[0];
  if (t.ndim() > 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("t() expects a tensor with <= 2 dimensions, but self is ",
                     t.ndim(), "D"));
  }
  if (t.ndim() < 2) return One(t);
  return One(t.AsStrided({t.shape()[1], t.shape()[0]},
                         {t.strides()[1], t.strides()[0]}, t.offset()));
}

Views Permute(absl::Span<const Tensor> in, const Attrs& attrs,
              const OpContext&) {
  const Tensor& t = in[0];
  const auto& dims = attrs.Ints("dims");
  if (static_cast<int>(dims.size()) != t.ndim()) {
    return absl::InvalidArgumentError(
        absl::StrCat("number of dims don't match in permute: input has ",
                     t.ndim(), " dims, dims has ", dims.size()));
  }
  Shape shape;
  Strides strides;
  std::vector<bool> seen(t.ndim(), false);
  for (int64_t d : dims) {
    TD_ASSIGN_OR_RETURN(int w, WrapDim(d, t.ndim()));
    if (seen[w]) return absl::InvalidArgumentError("repeated dim in permute");
    seen[w] = true;
    shape.push_back(t.shape()[w]);
    strides.push_back(t.strides()[w]);
  }
  return One(t.AsStrided(shape, strides, t.offset()));
}

Views Expand(absl::Span<const Tensor> in, const Attrs& attrs,
             const OpContext&) {
  const Tensor& t = in[0];
  const auto& size = attrs.Ints("size");
  const int n = static_cast<int>(size.size()), lead = n - t.ndim();
  if (lead < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the number of sizes provided (", n,
                     ") must be greater or equal to the number of dimensions "
                     "in the tensor (",
                     t.ndim(), ")"));
  }
  Shape shape(n);
  Strides strides(n);
  for (int i = 0; i < n; ++i) {
    const int src = i - lead;
    const int64_t have = src >= 0 ? t.shape()[src] : 1;
    int64_t want = size[i];
    if (want == -1) {
      if (src < 0) {
        return absl::InvalidArgumentError(
            "expand: -1 is not allowed in a leading, non-existing dimension");
      }
      want = have;
    }
    if (want < 0 || (have != 1 && have != want)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the expanded size of the tensor (", want,
          ") must match the existing size (", have,
          ") at non-singleton dimension ", i, ".  Target sizes: ",
          ShapeToString(size), ".  Tensor sizes: ", ShapeToString(t.shape())));
    }
    shape[i] = want;
    strides[i] = (src < 0 || have != want) ? 0 : t.strides()[src];
  }
  TD_RETURN_IF_ERROR(CheckShape(shape, ItemSize(t.dtype())));
  return One(t.AsStrided(shape, strides, t.offset()));
}

Views Squeeze(absl::Span<const Tensor> in, const Attrs& attrs,
              const OpContext&) {
  const Tensor& t = in[0];
  std::vector<bool> drop(t.ndim(), false);
  if (attrs.Has("dim")) {
    TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), t.ndim()));
    if (t.ndim() > 0 && t.shape()[d] == 1) drop[d] = true;
  } else {
    for (int d = 0; d < t.ndim(); ++d) drop[d] = t.shape()[d] == 1;
  }
  Shape shape;
  Strides strides;
  for (int d = 0; d < t.ndim(); ++d) {
    if (drop[d]) continue;
    shape.push_back(t.shape()[d]);
    strides.push_back(t.strides()[d]);
  }
  return One(t.AsStrided(shape, strides, t.offset()));
}

Views Unsqueeze(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext&) {
  const Tensor& t = in[0];
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), t.ndim() + 1));
  if (t.ndim() + 1 > kMaxDims) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensors have at most ", kMaxDims, " dimensions"));
  }
  Shape shape = t.shape();
  Strides strides = t.strides();
  const int64_t stride = d < t.ndim() ? shape[d] * strides[d] : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return One(t.AsStrided(shape, strides, t.offset()));
}

Views Flatten(absl::Span<const Tensor> in, const Attrs& attrs,
              const OpContext& ctx) {
  const Tensor& t = in[0];
  if (t.ndim() == 0) {
    Attrs a = *Attrs::Build("reshape", {Required("shape", AttrType::kInts)},
                            {{"shape", std::vector<int64_t>{1}}});
    return Reshape(in, a, ctx);
  }
  TD_ASSIGN_OR_RETURN(int s, WrapDim(attrs.Int("start_dim"), t.ndim()));
  TD_ASSIGN_OR_RETURN(int e, WrapDim(attrs.Int("end_dim"), t.ndim()));
  if (s > e) {
    return absl::InvalidArgumentError(
        "flatten() has invalid args: start_dim cannot come after end_dim");
  }
  std::vector<int64_t> shape(t.shape().begin(), t.shape().begin() + s);
  int64_t n = 1;
  for (int d = s; d <= e; ++d) n *= t.shape()[d];
  shape.push_back(n);
  shape.insert(shape.end(), t.shape().begin() + e + 1, t.shape().end());
  Attrs a = *Attrs::Build("reshape", {Required("shape", AttrType::kInts)},
                          {{"shape", shape}});
  return Reshape(in, a, ctx);
}

}  // namespace

std::vector<OpDef> ViewOps() {
  using I = std::vector<int64_t>;
  std::vector<OpDef> ops;
  ops.push_back(ViewRow("reshape", Reshape,
                        {Required("shape", AttrType::kInts)},
                        "The same data with a new shape (one dim may be -1); "
                        "a view when possible, else a copy.",
                        {{"shape", I{4, -1}}}));
  ops.push_back(ViewRow("view", View, {Required("shape", AttrType::kInts)},
                        "A view with a new shape (one dim may be -1).",
                        {{"shape", I{-1}}}));
  ops.push_back(ViewRow("transpose", Transpose,
                        {IntAttr("dim0"), IntAttr("dim1")},
                        "Swaps dims dim0 and dim1 (a view).",
                        {{"dim0", int64_t{0}}, {"dim1", int64_t{2}}}));
  OpDef t = ViewRow("t", T, {}, "Transpose of a tensor of <= 2 dims.", {});
  t.examples = {Example({{2, 3}})};
  ops.push_back(std::move(t));
  ops.push_back(ViewRow("permute", Permute, {Required("dims", AttrType::kInts)},
                        "The dims reordered (a view).",
                        {{"dims", I{2, 0, 1}}}));
  ops.push_back(ViewRow("expand", Expand, {Required("size", AttrType::kInts)},
                        "Size-1 dims repeated by stride 0 (-1 keeps a dim).",
                        {{"size", I{2, 2, 3, -1}}}));
  ops.push_back(ViewRow("squeeze", Squeeze,
                        {Optional("dim", AttrType::kInt, std::monostate{})},
                        "Size-1 dims removed (only `dim` when given).", {}));
  ops.push_back(ViewRow("unsqueeze", Unsqueeze, {IntAttr("dim")},
                        "A size-1 dim inserted at `dim`.",
                        {{"dim", int64_t{-1}}}));
  ops.push_back(ViewRow(
      "flatten", Flatten, {IntOr("start_dim", 0), IntOr("end_dim", -1)},
      "Dims start_dim..end_dim merged into one.", {{"start_dim", int64_t{1}}}));
  for (OpDef& def : SliceViewOps()) ops.push_back(std::move(def));
  return ops;
}

}  // namespace tensord

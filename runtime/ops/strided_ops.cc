// as_strided: a view of the input's storage with any sizes, strides and
// storage offset (PyTorch's as_strided), the primitive the reference
// decompositions of diagonal, diag_embed, unfold, trace ... are written in.
//
// Note [as_strided bounds]: unlike the other view rows, whose geometry is
// derived from an input that already fits its storage, as_strided takes its
// geometry from the client. Every element the view can reach must lie inside
// the storage's bytes (the allocation the session owns), else a hostile or
// careless call would read or, through an in-place op, write memory that
// belongs to another tensor, another session or the allocator. So the
// largest reachable element is computed with overflow checks and compared
// with the storage's size before the view is built; an empty view must
// still start inside the storage.
#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Views = absl::StatusOr<std::vector<Tensor>>;
using I = std::vector<int64_t>;

// Why `size`/`stride`/`offset` do not fit `t`'s storage, or OK
// (Note [as_strided bounds]).
absl::Status CheckInStorage(const Tensor& t, const I& size, const I& stride,
                            int64_t offset) {
  auto geometry = [&] {
    return absl::StrCat("sizes ", ShapeToString(size), ", strides ",
                        ShapeToString(stride), " and storage offset ", offset);
  };
  if (size.size() != stride.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("as_strided: mismatch in length of strides and shape (",
                     geometry(), ")"));
  }
  if (static_cast<int>(size.size()) > kMaxDims) {
    return absl::InvalidArgumentError(absl::StrCat(
        "as_strided: tensors have at most ", kMaxDims, " dimensions"));
  }
  if (offset < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("as_strided: invalid storage offset ", offset));
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  bool empty = false;
  int64_t last = offset;  // the largest element index the view reaches
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "as_strided: negative size ", size[d], " (", geometry(), ")"));
    }
    if (stride[d] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "as_strided: negative strides are not supported (", geometry(), ")"));
    }
    if (size[d] == 0) empty = true;
  }
  for (size_t d = 0; d < size.size() && !empty; ++d) {
    if (size[d] <= 1 || stride[d] == 0) continue;
    if (stride[d] > (kMax - last) / (size[d] - 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("as_strided: ", geometry(), " overflow"));
    }
    last += (size[d] - 1) * stride[d];
  }
  const int64_t item = static_cast<int64_t>(ItemSize(t.dtype()));
  const int64_t elements = static_cast<int64_t>(t.storage()->nbytes()) / item;
  // An empty view reaches nothing, but its start must be in the storage.
  if (empty ? offset > elements : last >= elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "as_strided: ", geometry(), " reach element ", last,
        " of a storage of ", elements, " elements (", DTypeName(t.dtype()),
        ", input ", ShapeToString(t.shape()), " at offset ", t.offset(), ")"));
  }
  return CheckShape(size, item);
}

// The view's storage offset: `storage_offset` (absolute, as in PyTorch) seen
// from `input_offset` (where the caller believes the input starts; by default
// where it does). The PyTorch device passes its wrapper's storage offset
// there, since its wrappers have no shared storage to count from (Note
// [as_strided offsets] in client/python/tensord/torch/_strided.py).
absl::StatusOr<int64_t> AsStridedOffset(const Tensor& t, const Attrs& attrs) {
  const int64_t in =
      attrs.Has("input_offset") ? attrs.Int("input_offset") : t.offset();
  if (!attrs.Has("storage_offset")) return t.offset();
  const int64_t rel = attrs.Int("storage_offset");
  if (in < 0 || rel < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("as_strided: invalid storage offset ", rel,
                     " (input offset ", in, ")"));
  }
  // in, rel >= 0 and t.offset() is a real offset: no overflow below 2^63.
  const int64_t shifted = t.offset() - in;
  if (shifted > 0 && rel > std::numeric_limits<int64_t>::max() - shifted) {
    return absl::InvalidArgumentError("as_strided: storage offset overflow");
  }
  return rel + shifted;
}

Views AsStrided(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext&) {
  const Tensor& t = in[0];
  TD_ASSIGN_OR_RETURN(int64_t offset, AsStridedOffset(t, attrs));
  const I& size = attrs.Ints("size");
  const I& stride = attrs.Ints("stride");
  TD_RETURN_IF_ERROR(CheckInStorage(t, size, stride, offset));
  return Views(std::vector<Tensor>{
      t.AsStrided(Shape(size.begin(), size.end()),
                  Strides(stride.begin(), stride.end()), offset)});
}

}  // namespace

std::vector<OpDef> StridedOps() {
  std::vector<OpDef> ops;
  OpDef def = MakeOp(
      "as_strided", 1, 1,
      {Required("size", AttrType::kInts), Required("stride", AttrType::kInts),
       Optional("storage_offset", AttrType::kInt, std::monostate{}),
       Optional("input_offset", AttrType::kInt, std::monostate{})},
      "A view of the input's storage with the given sizes, strides and "
      "storage offset (default: the input's); every element must lie in the "
      "storage. input_offset: where the caller counts the input to start.");
  def.view = AsStrided;
  def.native_half = true;
  // A [2, 3, 4] input: its diagonal planes, then an overlapping window.
  def.examples = {
      Example({{2, 3, 4}}, {{"size", I{2, 3}}, {"stride", I{12, 5}}}),
      Example({{2, 3, 4}}, {{"size", I{3, 4}},
                            {"stride", I{2, 1}},
                            {"storage_offset", int64_t{1}}})};
  ops.push_back(std::move(def));
  return ops;
}

}  // namespace tensord

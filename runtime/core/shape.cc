#include "runtime/core/shape.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tensord {

int64_t NumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Strides ContiguousStrides(absl::Span<const int64_t> shape) {
  Strides strides(shape.size());
  int64_t stride = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

absl::Status CheckShape(absl::Span<const int64_t> shape, size_t item_size) {
  if (shape.size() > kMaxDims) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", ShapeToString(shape), " has ", shape.size(),
                     " dimensions; at most ", kMaxDims, " are supported"));
  }
  constexpr int64_t kLimit = int64_t{1} << 62;
  int64_t bytes = static_cast<int64_t>(item_size);
  for (int64_t s : shape) {
    if (s < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", ShapeToString(shape), " has a negative dimension"));
    }
    // Zero sizes are skipped, not multiplied in: a tensor with no elements
    // still has strides, products of its other sizes, which must not
    // overflow ([0, 2^63-1, 2^63-1] was undefined behaviour; hostile sweep).
    if (s == 0) continue;
    if (bytes > kLimit / s) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeToString(shape),
                       " is too large (its size overflows)"));
    }
    bytes *= s;
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> BroadcastShapes(absl::Span<const int64_t> a,
                                      absl::Span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shapes ", ShapeToString(a), " and ", ShapeToString(b),
          " cannot be broadcast (dimension ", i, ": ", da, " vs ", db, ")"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

absl::StatusOr<int> WrapDim(int64_t dim, int rank) {
  const int effective = std::max(rank, 1);
  if (dim < -effective || dim >= effective) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dimension ", dim, " is out of range for a tensor of ", rank,
        " dimensions (expected [", -effective, ", ", effective - 1, "])"));
  }
  return static_cast<int>(dim < 0 ? dim + effective : dim);
}

std::string ShapeToString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace tensord

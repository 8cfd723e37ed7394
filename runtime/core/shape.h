// Shapes, strides and broadcasting. Pure functions of integers: nothing here
// touches memory, so shape inference can validate every call before a launch.
#ifndef TENSORD_RUNTIME_CORE_SHAPE_H_
#define TENSORD_RUNTIME_CORE_SHAPE_H_

#include <cstdint>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace tensord {

// Kernels take at most this many dimensions (see StridedView).
inline constexpr int kMaxDims = 8;

using Shape = absl::InlinedVector<int64_t, 6>;
using Strides = absl::InlinedVector<int64_t, 6>;

// Product of the sizes; 1 for a scalar. Callers validate with CheckShape first.
int64_t NumElements(absl::Span<const int64_t> shape);

// Row-major (C-contiguous) strides, in elements.
Strides ContiguousStrides(absl::Span<const int64_t> shape);

// INVALID_ARGUMENT unless every size is >= 0, rank <= kMaxDims, and the
// element count times `item_size` fits in 62 bits (no overflow downstream).
absl::Status CheckShape(absl::Span<const int64_t> shape, size_t item_size);

// NumPy/PyTorch broadcasting of two shapes; INVALID_ARGUMENT names both.
absl::StatusOr<Shape> BroadcastShapes(absl::Span<const int64_t> a,
                                      absl::Span<const int64_t> b);

// Wraps a possibly negative dim into [0, rank); INVALID_ARGUMENT otherwise.
// A scalar (rank 0) accepts dims -1 and 0, as PyTorch does.
absl::StatusOr<int> WrapDim(int64_t dim, int rank);

// "[2, 3]" — the way PyTorch prints sizes in its messages.
std::string ShapeToString(absl::Span<const int64_t> shape);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_SHAPE_H_

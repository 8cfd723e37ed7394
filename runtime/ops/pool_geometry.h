// The 2-d pools' geometry from their attributes, checked as PyTorch checks
// it (conv_ops.cc's max/avg pools, max_pool_ops.cc's rows with indices and
// cuda_conv.cc's wrappers read it), and the pair attributes conv2d shares.
// Private to the op table library.
#ifndef TENSORD_RUNTIME_OPS_POOL_GEOMETRY_H_
#define TENSORD_RUNTIME_OPS_POOL_GEOMETRY_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cpu/avg_pool3d.h"
#include "kernels/cpu/nn.h"
#include "runtime/core/strided.h"
#include "runtime/ops/attrs.h"
#include "runtime/tensor.h"

namespace tensord {

// An ints attribute of 1 or 2 values as a pair (`fallback` when empty), each
// at least `min_value`.
absl::StatusOr<std::pair<int64_t, int64_t>> IntPairAttr(
    const Attrs& attrs, const char* name, std::pair<int64_t, int64_t> fallback,
    int64_t min_value);

// A pool's input: floating (or int64 where `int64_ok`), [N, C, H, W] or
// [C, H, W].
absl::Status CheckPoolInput(const Tensor& x, const char* what,
                            bool int64_ok = false);

// max_pool2d's attributes (max_pool2d_with_indices and both backwards take
// them too): kernel_size; stride (empty: kernel_size); padding; dilation;
// ceil_mode.
std::vector<AttrSpec> MaxPoolAttrs();

// The window of a 2-d pool of `x` (CheckPoolInput's, its sizes after the
// batch dim non-zero) from kernel_size, stride, padding, ceil_mode and, for
// a `max_pool`, dilation (avg_pool2d has none, and takes int64 input too, as
// PyTorch's CPU kernel does: a sum divided by the count, truncated): padding at most half the kernel, the output size
// PyTorch's (pooling_output_shape: rounded down, or up in ceil mode, a last
// window that starts in the right padding dropped), at least 1. `what`
// names the row in errors.
absl::StatusOr<cpu::Window2d> PlanPool2d(const Tensor& x, const Attrs& attrs,
                                         bool max_pool, const char* what);

// x's shape with its last two sizes oh, ow.
Shape PoolShape(const Tensor& x, int64_t oh, int64_t ow);

// The [N, C, H, W] view of a contiguous 3-d or 4-d tensor.
StridedView As4d(const Tensor& t);

// An adaptive pool's output shape: `x` floating, with `spatial` (2 or 3)
// pooled dims after an optional batch dim and the channels, every size
// but the first non-zero (PyTorch's checks); output_size one int or
// `spatial` of them, each >= 0, in place of x's last `spatial` sizes.
absl::StatusOr<Shape> PlanAdaptivePool(const Tensor& x, const Attrs& attrs,
                                       int spatial, const char* what);

// avg_pool3d's window of `x` ([N, C, D, H, W] or [C, D, H, W], floating or
// int64, every size but the first non-zero) from kernel_size, stride (empty:
// kernel_size) and padding (1 or 3 values each), ceil_mode,
// count_include_pad and divisor_override (0: none), checked as PyTorch's
// avg_pool3d: padding at most half the kernel, each output size PyTorch's
// (pooling_output_shape, as PlanPool2d's) and at least 1. `shape`: x's
// shape pooled.
struct AvgPool3dPlan {
  cpu::AvgWindow3d window;
  Shape shape;
};
absl::StatusOr<AvgPool3dPlan> PlanAvgPool3d(const Tensor& x, const Attrs& attrs,
                                            const char* what);

// avg_pool3d's attributes (its backward row takes them too).
std::vector<AttrSpec> AvgPool3dAttrs();

// The [P, D, H, W] view of a contiguous tensor whose last `spatial` (2 or
// 3) dims are pooled: D = 1 for 2, P the product of the other sizes.
StridedView AsVolumes(const Tensor& t, int spatial);

// The [P, 1, 1, S] view of a contiguous tensor, S the product of its last
// `spatial` sizes: the planes that indices into flattened planes address
// (cpu::MaxPool2dWithIndicesBackward's views for the 3-d and adaptive
// pools).
StridedView AsFlatPlanes(const Tensor& t, int spatial);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_POOL_GEOMETRY_H_

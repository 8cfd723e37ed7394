// grid_sampler_2d's backward (PyTorch's aten.grid_sampler_2d_backward) on
// contiguous float32/float64 data: the gradients of the input and of the
// sampling grid, for bilinear, nearest and bicubic interpolation with zeros,
// border or reflection padding, as ATen's CPU kernel computes them (its
// scalar fallback, GridSampler.cpp, whose arithmetic this follows step by
// step). The forward runs as PyTorch's decomposition on the device's ops.
// Images are split over the intra-op pool; each image's input gradient is
// written by one thread in output order, so results depend on neither the
// pool size nor timing.
#ifndef TENSORD_KERNELS_CPU_GRID_SAMPLE_H_
#define TENSORD_KERNELS_CPU_GRID_SAMPLE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// PyTorch's enum values (GridSamplerInterpolation, GridSamplerPadding).
enum class GridInterpolation { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum class GridPadding { kZeros = 0, kBorder = 1, kReflection = 2 };

// grad [N, C, Ho, Wo], input [N, C, H, W], grid [N, Ho, Wo, 2] (x, y in
// [-1, 1]) in; grad_input [N, C, H, W] (overwritten; skipped when its data
// is null) and grad_grid [N, Ho, Wo, 2] (overwritten) out. All contiguous,
// one dtype.
absl::Status GridSampler2dBackward(
    const StridedView& grad, const StridedView& input, const StridedView& grid,
    GridInterpolation mode, GridPadding padding, bool align_corners,
    const StridedView& grad_input, const StridedView& grad_grid);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_GRID_SAMPLE_H_

// grid_sampler_3d and its backward (PyTorch's aten.grid_sampler_3d and
// aten.grid_sampler_3d_backward) on contiguous float32/float64 data:
// trilinear ("bilinear") and nearest sampling of [N, C, D, H, W] volumes at
// grid points (x, y, z in [-1, 1] index W, H, D), with zeros, border or
// reflection padding, as ATen's CPU kernels compute them (GridSampler.cpp's
// grid_sampler_3d_cpu_impl and its backward; the coordinate steps are
// grid_coords.h's, shared with the 2-d kernel). PyTorch has no bicubic mode
// in 3-d. The forward splits output points over the intra-op pool; the
// backward splits images, each image's input gradient written by one thread
// in output order, so results depend on neither the pool size nor timing.
#ifndef TENSORD_KERNELS_CPU_GRID_SAMPLE_3D_H_
#define TENSORD_KERNELS_CPU_GRID_SAMPLE_3D_H_

#include "absl/status/status.h"
#include "kernels/cpu/grid_sample.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// input [N, C, D, H, W], grid [N, Do, Ho, Wo, 3] in; output [N, C, Do, Ho,
// Wo] out. mode: kBilinear or kNearest. All contiguous, one dtype.
absl::Status GridSampler3d(const StridedView& input, const StridedView& grid,
                           GridInterpolation mode, GridPadding padding,
                           bool align_corners, const StridedView& output);

// grad [N, C, Do, Ho, Wo], input, grid in; grad_input [N, C, D, H, W]
// (overwritten; skipped when its data is null) and grad_grid [N, Do, Ho,
// Wo, 3] (overwritten) out.
absl::Status GridSampler3dBackward(
    const StridedView& grad, const StridedView& input, const StridedView& grid,
    GridInterpolation mode, GridPadding padding, bool align_corners,
    const StridedView& grad_input, const StridedView& grad_grid);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_GRID_SAMPLE_3D_H_

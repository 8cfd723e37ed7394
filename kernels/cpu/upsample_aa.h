// Antialiased bilinear resampling of [N, C, H, W] float32/float64 images, as
// ATen's CPU kernels compute it (UpSampleKernel.cpp, PIL's triangle filter):
// _upsample_bilinear2d_aa and its backward. Each output pixel along a dim is
// a normalised weighted sum over the input pixels within `support` of its
// centre, support = max(scale, 1) (the filter widened by the scale when
// downsampling). The weights are computed in the data's dtype with ATen's
// expressions, so they are ATen's bit for bit.
//
// Forward: one separable pass per dim whose size changes, width first, then
// height (through a scratch image when both change); an unchanged shape is a
// copy (a dim of unchanged size is not resampled, whatever its scale).
// Backward: every output pixel's gradient scattered into its input window
// with the product of both dims' weights, for every dim (ATen's backward does
// not skip unchanged dims). Both split the N * C planes over the pool: each
// plane is written by one thread, in ATen's order.
#ifndef TENSORD_KERNELS_CPU_UPSAMPLE_AA_H_
#define TENSORD_KERNELS_CPU_UPSAMPLE_AA_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

struct AaResample {
  bool align_corners = false;
  // PyTorch's scales_h/scales_w (output over input size); unset or <= 0:
  // the sizes' ratio.
  std::optional<double> scale_h, scale_w;
};

// input [N, C, H, W] contiguous; out [N, C, OH, OW] contiguous (overwritten).
absl::Status UpsampleBilinear2dAa(const StridedView& input,
                                  const StridedView& out,
                                  const AaResample& how);

// grad_output [N, C, OH, OW] contiguous; grad_input [N, C, H, W] contiguous
// (overwritten).
absl::Status UpsampleBilinear2dAaBackward(const StridedView& grad_output,
                                          const StridedView& grad_input,
                                          const AaResample& how);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_UPSAMPLE_AA_H_

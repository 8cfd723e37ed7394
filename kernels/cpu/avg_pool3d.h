// 3-d average pooling, windowed (avg_pool3d) and adaptive
// (adaptive_avg_pool3d), and their backward, on contiguous [P, D, H, W]
// views (P the planes: N * C, or C unbatched).
//
// The window of output (t, i, j) is a box, one range per dim: avg_pool3d's
// [o * stride - pad, o * stride - pad + kernel) clipped to the padded input
// (its padded length) and then to the input; adaptive_avg_pool3d's PyTorch
// windows [floor(o * in / out), ceil((o + 1) * in / out)). The divisor is
// divisor_override when non-zero, else the padded box's volume with
// count_include_pad, else the clipped box's (adaptive: the box's): PyTorch's
// CPU rules. A box with nothing inside the input (none arises from PyTorch's
// output sizes) gives 0 and takes no gradient.
#ifndef TENSORD_KERNELS_CPU_AVG_POOL3D_H_
#define TENSORD_KERNELS_CPU_AVG_POOL3D_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

struct AvgWindow3d {
  bool adaptive = false;
  // avg_pool3d's geometry, depth, height, width (unused when adaptive).
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
};

// One dim of a box: [lo, hi) inside the input, `padded` its length before
// the clip to the input.
struct BoxRange {
  int64_t lo, hi, padded;
};

// The range of output `o` (of `out`) along dim `d` of size `in`.
inline BoxRange AvgRange(const AvgWindow3d& w, int d, int64_t o, int64_t in,
                         int64_t out) {
  if (w.adaptive) {
    const int64_t lo = o * in / out, hi = ((o + 1) * in + out - 1) / out;
    return {lo, hi, hi - lo};
  }
  int64_t lo = o * w.stride[d] - w.pad[d];
  int64_t hi =
      lo + w.kernel[d] < in + w.pad[d] ? lo + w.kernel[d] : in + w.pad[d];
  const int64_t padded = hi - lo;
  lo = lo < 0 ? 0 : lo;
  hi = hi > in ? in : hi;
  return {lo, hi, padded};
}

// in [P, D, H, W] (floating, or int64 for a windowed pool: an int64 sum
// divided with truncation, as PyTorch's CPU kernel), out [P, od, oh, ow].
// Planes are split over the intra-op pool.
absl::Status AvgPool3d(const StridedView& in, const AvgWindow3d& w,
                       const StridedView& out);

// grad [P, od, oh, ow], grad_input [P, D, H, W] (overwritten, floating):
// each output's gradient over its divisor added to its box, in output
// order.
absl::Status AvgPool3dBackward(const StridedView& grad, const AvgWindow3d& w,
                               const StridedView& grad_input);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_AVG_POOL3D_H_

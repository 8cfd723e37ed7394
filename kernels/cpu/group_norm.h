// group_norm's forward and backward as fused kernels (PyTorch's
// native_group_norm and native_group_norm_backward) on contiguous
// float32/float64 data seen as [N, C, HxW], C split into `groups` groups of
// D = C / groups channels; a group's D * HxW values are contiguous. The
// composite they replace (reshape, layer_norm, reshape, mul, add) took five
// passes forward and as many backward; these read x once for the statistics
// and once for the output (the per-channel affine folded into one scale and
// shift), and the backward reads dy and x once for the per-channel sums and
// once for dx, a group staying in cache between its passes (Note [CPU
// group_norm] in group_norm.cc). (n, group) pairs are split over the intra-op
// pool; every sum ends in double.
#ifndef TENSORD_KERNELS_CPU_GROUP_NORM_H_
#define TENSORD_KERNELS_CPU_GROUP_NORM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// The geometry of a group_norm call: x is [n, c, hw], c % groups == 0.
struct GroupNormShape {
  int64_t n, c, hw, groups;
};

// y = (x - mean) * rstd * weight[c] + bias[c], with mean and rstd =
// 1/sqrt(biased var + eps) per (n, group) written to [n, groups]. weight and
// bias are [c] or empty views (data == nullptr): 1 and 0.
absl::Status GroupNormForward(const StridedView& x, const GroupNormShape& s,
                              const StridedView& weight,
                              const StridedView& bias, double eps,
                              const StridedView& y, const StridedView& mean,
                              const StridedView& rstd);

// From dy and the forward's x, mean and rstd: dx [n, c, hw] and the weight
// and bias gradients [c], each skipped when its view is empty (ATen's
// formula: per (n, c) sums of dy and dy * x, per (n, group) coefficients,
// then dx = rstd * weight * dy + c2 * x + c3).
absl::Status GroupNormBackward(const StridedView& dy, const StridedView& x,
                               const GroupNormShape& s,
                               const StridedView& mean, const StridedView& rstd,
                               const StridedView& weight, const StridedView& dx,
                               const StridedView& dweight,
                               const StridedView& dbias);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_GROUP_NORM_H_

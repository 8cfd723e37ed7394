// batch_norm's training forward and its backward as two fused kernels on
// contiguous float32/float64 data seen as [N, C, S] (S: the spatial sizes'
// product, 1 for a 2-d input). The composite they replace took ~20 ops and
// six passes over x forward, as many again backward; these take two each.
// Channels are split over the intra-op pool; each channel's sums run in
// double in a fixed order, so results do not depend on the pool size.
#ifndef TENSORD_KERNELS_CPU_BATCH_NORM_H_
#define TENSORD_KERNELS_CPU_BATCH_NORM_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// y = (x - mean) / sqrt(var + eps) * weight + bias per channel, with mean
// and the biased var [C] of x over N and S written out. weight and bias may
// be empty views (data == nullptr): 1 and 0.
absl::Status BatchNormForward(const StridedView& x, const StridedView& weight,
                              const StridedView& bias, double eps,
                              const StridedView& y, const StridedView& mean,
                              const StridedView& var);

// From dy and the forward's x, mean and var: dx, and the weight and bias
// gradients [C] (each skipped when its view is empty).
absl::Status BatchNormBackward(const StridedView& dy, const StridedView& x,
                               const StridedView& mean, const StridedView& var,
                               const StridedView& weight, double eps,
                               const StridedView& dx,
                               const StridedView& dweight,
                               const StridedView& dbias);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_BATCH_NORM_H_

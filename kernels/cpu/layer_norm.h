// layer_norm's forward and backward as fused kernels on contiguous
// float32/float64 data seen as [M, N] (N: the product of normalized_shape,
// M: the rest). The composite they replace took ~10 ops and as many passes
// over x forward; each of these reads its inputs once (a row stays in L1
// between its passes). Rows are split over the intra-op pool (large passes
// only: Note [CPU layer_norm] in layer_norm.cc); each row's sums end in
// double.
#ifndef TENSORD_KERNELS_CPU_LAYER_NORM_H_
#define TENSORD_KERNELS_CPU_LAYER_NORM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// y = (x - mean) * rstd * weight + bias per row, with mean and rstd =
// 1/sqrt(biased var + eps) [M] written out. weight and bias are [N] or
// empty views (data == nullptr): 1 and 0.
absl::Status LayerNormForward(const StridedView& x, int64_t m, int64_t n,
                              const StridedView& weight,
                              const StridedView& bias, double eps,
                              const StridedView& y, const StridedView& mean,
                              const StridedView& rstd);

// From dy and the forward's x, mean and rstd: dx, and the weight and bias
// gradients [N] (each skipped when its view is empty).
absl::Status LayerNormBackward(const StridedView& dy, const StridedView& x,
                               int64_t m, int64_t n, const StridedView& mean,
                               const StridedView& rstd,
                               const StridedView& weight, const StridedView& dx,
                               const StridedView& dweight,
                               const StridedView& dbias);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_LAYER_NORM_H_

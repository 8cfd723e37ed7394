// The backward of PyTorch's multi-class margin losses on contiguous
// float32/float64 rows, as ATen's CPU kernels compute them
// (LossMultiMargin.cpp, LossMultiLabelMargin.cpp): multi_margin_loss_backward
// and multilabel_margin_loss_backward. The forwards run as PyTorch's
// decompositions on the device's ops. A 1-d input is one row (N = 1). Target
// values are data: each kernel checks them before it writes anything and
// refuses bad ones with INVALID_ARGUMENT. Rows split over the intra-op pool;
// each row is written by one thread.
#ifndef TENSORD_KERNELS_CPU_MARGIN_LOSS_H_
#define TENSORD_KERNELS_CPU_MARGIN_LOSS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// How the loss was reduced: the gradient of each row's loss is scaled by
// grad_output[n] (kNone: one per row) or by grad_output[0] / N (kMean) or
// grad_output[0] (kSum).
enum class LossReduction { kNone, kMean, kSum };

// input [N, C], target [N] int64 in [0, C), weight [C] (data null: none),
// grad_output (N values or 1) in; grad_input [N, C] out (overwritten).
// p is 1 or 2. The loss of row n is
//   sum_{i != y} w[y] max(0, margin - x[y] + x[i])^p / C.
absl::Status MultiMarginLossBackward(const StridedView& grad_output,
                                     const StridedView& input,
                                     const StridedView& target,
                                     const StridedView& weight, int p,
                                     double margin, LossReduction reduction,
                                     const StridedView& grad_input);

// input [N, C], target [N, C] int64 (class indices up to the first -1),
// is_target [N, C] (input's dtype: 1 where column is a target), grad_output
// (N values or 1) in; grad_input [N, C] out (overwritten). The loss of row n
// is sum_{j target} sum_{i not target} max(0, 1 - x[j] + x[i]) / C.
absl::Status MultilabelMarginLossBackward(const StridedView& grad_output,
                                          const StridedView& input,
                                          const StridedView& target,
                                          const StridedView& is_target,
                                          LossReduction reduction,
                                          const StridedView& grad_input);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_MARGIN_LOSS_H_

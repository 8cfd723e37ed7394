// cross_entropy with class-index targets (log_softmax + nll_loss + label
// smoothing, PyTorch's semantics) as one fused kernel each way, on
// contiguous float32/float64 logits seen as [N, C, S] (S: the product of the
// dims after the class dim, 1 for [N, C]) and int64 targets [N, S]. The
// forward keeps only each row's log-sum-exp, not the [N, C, S]
// log-probabilities: the backward recomputes softmax from the logits in the
// same pass that writes the gradient. The composite they replace took ~15
// ops and wrote the log-probabilities and several [N*S] temporaries.
#ifndef TENSORD_KERNELS_CPU_CROSS_ENTROPY_H_
#define TENSORD_KERNELS_CPU_CROSS_ENTROPY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/kernel_ops.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

using ::tensord::CrossEntropyGeometry;
using ::tensord::LossReduction;

// loss: [N*S] per position (kNone) or 0-d (kMean: divided by the total
// weight, kSum); lse [N*S] (each row's log-sum-exp); total_weight 0-d (the
// summed class weights of the targets not ignored). weight: [C] or empty.
// A target outside [0, C) that is not ignore_index is InvalidArgument.
absl::Status CrossEntropyForward(const StridedView& logits,
                                 const StridedView& target,
                                 const StridedView& weight,
                                 const CrossEntropyGeometry& g,
                                 const StridedView& loss,
                                 const StridedView& lse,
                                 const StridedView& total_weight);

// grad_loss: [N*S] (kNone) or 0-d; writes grad_logits [N, C, S].
absl::Status CrossEntropyBackward(
    const StridedView& grad_loss, const StridedView& logits,
    const StridedView& target, const StridedView& weight,
    const StridedView& lse, const StridedView& total_weight,
    const CrossEntropyGeometry& g, const StridedView& grad_logits);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_CROSS_ENTROPY_H_

// The connectionist temporal classification loss (PyTorch's aten._ctc_loss)
// and its gradient (aten._ctc_loss_backward) on contiguous float32/float64
// log-probabilities, as ATen's CPU kernels compute them (LossCTC.cpp: the
// alpha and beta recursions of Graves et al. in log space, the same steps).
// Lengths and targets are data: each kernel checks them before it writes
// anything and refuses bad ones with INVALID_ARGUMENT. Batch entries split
// over the intra-op pool, each written by one thread.
//
// Note [CTC log_alpha width]: log_alpha is [N, T, 2 * S + 1] for a
// `max_target_length` S the caller chooses (PyTorch's meta function: the
// largest target length; any S at least that works), and every
// target_lengths[b] must be at most S. Entries past a sequence's input
// length or its 2 * target_length + 1 states are -inf (ATen leaves them
// unset). The forward does not apply zero_infinity (ATen's ctc_loss
// wrapper does); the backward zeroes the gradient of an infinite loss when
// it is set.
#ifndef TENSORD_KERNELS_CPU_CTC_LOSS_H_
#define TENSORD_KERNELS_CPU_CTC_LOSS_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// log_probs [T, N, C], targets [N, S'] (S' >= each target length) or the
// targets of every batch entry concatenated [sum of target_lengths],
// input_lengths [N] and target_lengths [N] (int64) in; neg_log_likelihood
// [N] and log_alpha [N, T, 2 S + 1] out (overwritten).
absl::Status CtcLoss(const StridedView& log_probs, const StridedView& targets,
                     const StridedView& input_lengths,
                     const StridedView& target_lengths, int64_t blank,
                     const StridedView& neg_log_likelihood,
                     const StridedView& log_alpha);

// grad [N] (of neg_log_likelihood), the forward's inputs and outputs in;
// grad_log_probs [T, N, C] out (overwritten; zero past each input length).
absl::Status CtcLossBackward(
    const StridedView& grad, const StridedView& log_probs,
    const StridedView& targets, const StridedView& input_lengths,
    const StridedView& target_lengths, const StridedView& neg_log_likelihood,
    const StridedView& log_alpha, int64_t blank, bool zero_infinity,
    const StridedView& grad_log_probs);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_CTC_LOSS_H_

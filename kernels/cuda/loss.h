// CUDA fused cross entropy with the contract of kernels/cpu/cross_entropy.h
// (class-index targets, ignore_index, label smoothing, class weights,
// log_probs for nll_loss; logits [N, C, S] contiguous float32/float64,
// int64 targets [N, S]; the geometry is runtime/core's, shared with the CPU).
// Plain C++ header; asynchronous on `stream`.
//
// Target values are data on the device: the forward skips an out-of-range
// target (as kernels/cuda/index.h does with indices) and records the
// smallest such position in `*bad` (one device int64, -1 when all are
// valid, reset by ResetBadTarget), which the runtime reads back to report
// INVALID_ARGUMENT naming the value.
#ifndef TENSORD_KERNELS_CUDA_LOSS_H_
#define TENSORD_KERNELS_CUDA_LOSS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/kernel_ops.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

using ::tensord::CrossEntropyGeometry;  // runtime/core/kernel_ops.h
using ::tensord::LossReduction;

// Sets *bad = -1 (device memory), ordered on `stream`.
absl::Status ResetBadTarget(int64_t* bad, StreamHandle stream);

// loss [N*S] (kNone) or 0-d, lse [N*S], total_weight 0-d, as the CPU.
// `scratch`: N*S doubles of device memory (each position's loss, summed in
// a second kernel; unused under kNone).
absl::Status CrossEntropyForward(
    const StridedView& logits, const StridedView& target,
    const StridedView& weight, const CrossEntropyGeometry& g,
    const StridedView& loss, const StridedView& lse,
    const StridedView& total_weight, double* scratch, int64_t* bad,
    StreamHandle stream);

// grad_loss [N*S] (kNone) or 0-d; writes grad_logits [N, C, S]. Reads the
// 0-d grad and total weight on the device (no host round trip).
absl::Status CrossEntropyBackward(
    const StridedView& grad_loss, const StridedView& logits,
    const StridedView& target, const StridedView& weight,
    const StridedView& lse, const StridedView& total_weight,
    const CrossEntropyGeometry& g, const StridedView& grad_logits,
    StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_LOSS_H_

// Fused CUDA optimizer steps: one kernel per parameter tensor updates the
// parameter and its state in place, with torch.optim's single-tensor
// algorithms as the CPU loops of runtime/ops/sgd_step_ops.cc and
// adam_step_ops.cc run them (same order of operations, arithmetic in the
// tensors' dtype), instead of the ten or so elementwise launches of the
// composed path.
//
// Contract: every view is contiguous, of one dtype (float32 or float64),
// with the same number of elements; `p`, `buf`, `m`, `v` are written in
// place and overlap nothing else. Only enqueues work on `stream`.
#ifndef TENSORD_KERNELS_CUDA_OPTIM_H_
#define TENSORD_KERNELS_CUDA_OPTIM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

struct SgdParams {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
  bool first_step = false;  // the momentum buffer is set to the gradient
};

// p -= lr * d, d = grad (+ weight decay, momentum, nesterov as in
// torch.optim.SGD); `buf` is unused (may be empty) without momentum.
absl::Status SgdStep(const SgdParams& c, const StridedView& p,
                     const StridedView& grad, const StridedView& buf,
                     StreamHandle stream);

struct AdamParams {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  int64_t step = 1;                          // 1-based, after incrementing
  bool decoupled = false, maximize = false;  // decoupled: AdamW
};

// torch.optim.Adam/AdamW's update of p with moments m and v.
absl::Status AdamStep(const AdamParams& c, const StridedView& p,
                      const StridedView& grad, const StridedView& m,
                      const StridedView& v, StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_OPTIM_H_

// CUDA neural-network kernels with the contracts of kernels/cpu/nn.h.
// Plain C++ header; asynchronous on `stream`.
#ifndef TENSORD_KERNELS_CUDA_NN_H_
#define TENSORD_KERNELS_CUDA_NN_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

// Softmax (or log-softmax) over the middle dim of a contiguous
// [outer, dim, inner] float32/float64 `in` into a contiguous `out`;
// max-subtracted, accumulating in the element type (as PyTorch on CUDA).
absl::Status Softmax(const StridedView& in, int64_t outer, int64_t dim,
                     int64_t inner, bool log, const StridedView& out,
                     StreamHandle stream);

// 2-d pooling on contiguous [N, C, H, W] float32/float64 views (AvgPool2d
// int64 too: an int64 sum divided with truncation), with the semantics of
// kernels/cpu (NaN propagates in max; avg divisors clip the window to the
// padded input, count_include_pad and divisor_override (0: none) as
// PyTorch; max backward sends the
// gradient to the last NaN, else the first maximum). Backward kernels
// overwrite grad_input (zero, then atomic adds).
struct PoolWindow {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t oh, ow;
};
absl::Status MaxPool2d(const StridedView& in, const PoolWindow& w,
                       const StridedView& out, StreamHandle stream);
absl::Status AvgPool2d(const StridedView& in, const PoolWindow& w,
                       bool count_include_pad, int64_t divisor_override,
                       const StridedView& out, StreamHandle stream);
absl::Status AdaptiveAvgPool2d(const StridedView& in, const StridedView& out,
                               StreamHandle stream);
absl::Status MaxPool2dBackward(const StridedView& grad,
                               const StridedView& input, const PoolWindow& w,
                               const StridedView& grad_input,
                               StreamHandle stream);
absl::Status AvgPool2dBackward(const StridedView& grad, const PoolWindow& w,
                               bool count_include_pad, int64_t divisor_override,
                               const StridedView& grad_input,
                               StreamHandle stream);
absl::Status AdaptiveAvgPool2dBackward(const StridedView& grad,
                                       const StridedView& grad_input,
                                       StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_NN_H_

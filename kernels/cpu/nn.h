// Neural-net kernels on contiguous float32/float64 tensors: 2-d pooling
// (the window geometry conv2d shares). softmax is softmax.h's.
//
// Contract: views are C-contiguous and of one floating dtype; shapes were
// validated by the runtime (windows fit, outputs sized by its formulas).
#ifndef TENSORD_KERNELS_CPU_NN_H_
#define TENSORD_KERNELS_CPU_NN_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

struct Window2d {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
  int64_t oh, ow;  // output size
};

// in [N, C, H, W], out [N, C, oh, ow]. Padding never wins a max.
absl::Status MaxPool2d(const StridedView& in, const Window2d& w,
                       const StridedView& out);
// count_include_pad: divide by the window clipped to the padded input
// (PyTorch's rule), else by the in-bounds count; a non-zero
// divisor_override (PyTorch's divisor_override, any sign) divides instead.
// Floating dtypes and int64 (an int64 sum divided with truncation, as
// PyTorch's CPU kernel).
absl::Status AvgPool2d(const StridedView& in, const Window2d& w,
                       bool count_include_pad, int64_t divisor_override,
                       const StridedView& out);
// PyTorch's adaptive windows: [floor(i*H/oh), ceil((i+1)*H/oh)).
absl::Status AdaptiveAvgPool2d(const StridedView& in, const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_NN_H_

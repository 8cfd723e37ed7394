// Gradients of conv2d and the 2-d pools on contiguous float32/float64 NCHW
// data (the kernels behind conv2d_backward_input/weight and
// *_pool2d_backward).
//
// conv2d, image by image as its forward (conv.h): the weight gradient adds,
// per group, grad [og, L] times the image's columns [cg*kh*kw, L] transposed;
// the input gradient is the weight [og, cg*kh*kw] transposed times grad,
// scattered back by col2im. Images are split over the intra-op pool, each
// thread with its own columns and partial weight gradient (summed in thread
// order at the end); a workspace with room for one thread only takes the
// images in turn and splits each image's work over the pool instead. Results
// do not depend on thread timing.
#ifndef TENSORD_KERNELS_CPU_CONV_GRAD_H_
#define TENSORD_KERNELS_CPU_CONV_GRAD_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/nn.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// Elements of scratch (in the data's dtype) for both conv gradients: per
// thread one image's columns (c * kh * kw * oh * ow) and a weight gradient
// (o * c/groups * kh * kw), for one thread only when that would pass 64 MiB
// of float32. A smaller workspace works as long as it holds one thread's.
int64_t ConvGradWorkspace(const ConvGeometry& g);

// grad_weight [o, c/groups, kh, kw] (overwritten) from grad and input.
absl::Status Conv2dBackwardWeight(const StridedView& grad,
                                  const StridedView& input,
                                  const ConvGeometry& g,
                                  const StridedView& workspace,
                                  const StridedView& grad_weight);
// grad_input [n, c, h, w] (overwritten) from grad and weight.
absl::Status Conv2dBackwardInput(const StridedView& grad,
                                 const StridedView& weight,
                                 const ConvGeometry& g,
                                 const StridedView& workspace,
                                 const StridedView& grad_input);

// Pools: grad [planes, oh, ow], input / grad_input [planes, h, w] given as
// 4-d views [N, C, ., .]; grad_input is overwritten. w.oh/w.ow are grad's.
// Max: the gradient goes to the window's maximum, the last NaN if any, else
// the first maximal element (PyTorch's CPU rule). `output`, when its data is
// set, is the forward's output (MaxPool2d of `input` with `w`, shaped as
// grad): its values are the window maxima, which are then not recomputed.
absl::Status MaxPool2dBackward(const StridedView& grad,
                               const StridedView& input,
                               const StridedView& output, const Window2d& w,
                               const StridedView& grad_input);
absl::Status AvgPool2dBackward(const StridedView& grad, const Window2d& w,
                               bool count_include_pad, int64_t divisor_override,
                               const StridedView& grad_input);
absl::Status AdaptiveAvgPool2dBackward(const StridedView& grad,
                                       const StridedView& grad_input);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_CONV_GRAD_H_

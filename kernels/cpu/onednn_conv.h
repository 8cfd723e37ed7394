// conv2d's and conv3d's forward and gradients on float32 NCHW / NCDHW data
// through oneDNN
// (Debian's libdnnl), the library behind PyTorch's CPU convolutions: its JIT
// kernels in place of im2col + OpenBLAS (conv.h, conv_grad.h), which stay the
// path of float64 and the reference the tests compare against. The CNN and
// ResNet-style training steps with each: BENCHMARKS.md "oneDNN convolutions
// and fused batch_norm".
//
// Note [oneDNN threads]: Debian's oneDNN runs on OpenMP, a second thread pool
// whose threads spin after each call, on cores the intra-op pool needs for
// the next op (as OpenBLAS's did: Note [GEMM threads]). So oneDNN runs with
// one OpenMP thread, on the intra-op pool's threads: the batch is split into
// one block of images per thread, each its own oneDNN call (a primitive per
// block geometry, cached); weight gradients of the blocks are added in block
// order, so results depend on the pool size, never on timing.
//
// Tensors are plain NCHW / OIHW (NCDHW / OIDHW) at the boundary: oneDNN picks
// its blocked layouts inside each call and reorders into and out of them.
// conv3d's direct loops (conv3d.h) stay the path of float64 and the
// reference the tests compare against.
#ifndef TENSORD_KERNELS_CPU_ONEDNN_CONV_H_
#define TENSORD_KERNELS_CPU_ONEDNN_CONV_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv3d.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// True when the oneDNN path takes this conv: float32, a non-empty geometry.
bool OnednnConvApplies(DType dtype, const ConvGeometry& g);
bool OnednnConvApplies(DType dtype, const ConvGeometry3d& g);

// Elements of float32 scratch Conv2dBackwardWeight needs (partial weight
// gradients of all image blocks but the first).
int64_t OnednnConvGradWorkspace(const ConvGeometry& g);
int64_t OnednnConvGradWorkspace(const ConvGeometry3d& g);

// As Conv2d / Conv2dBackwardInput / Conv2dBackwardWeight (contiguous
// tensors, outputs overwritten), when OnednnConvApplies.
absl::Status OnednnConv2d(const StridedView& input, const StridedView& weight,
                          const ConvGeometry& g, const StridedView& out);
absl::Status OnednnConv2dBackwardInput(const StridedView& grad,
                                       const StridedView& weight,
                                       const ConvGeometry& g,
                                       const StridedView& grad_input);
absl::Status OnednnConv2dBackwardWeight(const StridedView& grad,
                                        const StridedView& input,
                                        const ConvGeometry& g,
                                        const StridedView& workspace,
                                        const StridedView& grad_weight);

// The same for conv3d (Conv3d, Conv3dBackwardInput, Conv3dBackwardWeight
// of conv3d.h); OnednnConv3dBackwardWeight's workspace holds
// OnednnConvGradWorkspace(g) elements.
absl::Status OnednnConv3d(const StridedView& input, const StridedView& weight,
                          const ConvGeometry3d& g, const StridedView& out);
absl::Status OnednnConv3dBackwardInput(const StridedView& grad,
                                       const StridedView& weight,
                                       const ConvGeometry3d& g,
                                       const StridedView& grad_input);
absl::Status OnednnConv3dBackwardWeight(const StridedView& grad,
                                        const StridedView& input,
                                        const ConvGeometry3d& g,
                                        const StridedView& workspace,
                                        const StridedView& grad_weight);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_ONEDNN_CONV_H_

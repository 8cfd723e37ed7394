// max_pool2d and adaptive max pooling with indices, and their backward, on
// CUDA, with the contract of
// kernels/cpu/max_pool.h (Note [Max pool indices]: PyTorch's indices, ties to
// the first maximum, NaN to the last NaN). Contiguous [N, C, H, W] float32/
// float64 data, int64 indices; asynchronous on `stream`. Plain C++ header.
#ifndef TENSORD_KERNELS_CUDA_MAX_POOL_H_
#define TENSORD_KERNELS_CUDA_MAX_POOL_H_

#include "absl/status/status.h"
#include "kernels/cuda/nn.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

// One thread per output: its window in scan order, as the CPU.
absl::Status MaxPool2dWithIndices(const StridedView& in, const PoolWindow& w,
                                  const StridedView& out,
                                  const StridedView& indices,
                                  StreamHandle stream);

// Adaptive max pooling with indices: in [P, D, H, W] (D = 1 for a 2-d
// pool), out and indices [P, od, oh, ow]; kernels/cpu/max_pool.h's
// AdaptiveMaxPool3d, one thread per output.
absl::Status AdaptiveMaxPool3d(const StridedView& in, const StridedView& out,
                               const StridedView& indices, StreamHandle stream);

// grad_input zeroed, then one thread per grad element adds it at its index
// (atomic adds: the order of the additions to one input element, and so a
// float sum's last bits, may vary from run to run). Indices outside
// [0, H * W) add nothing, as on the CPU; they are not reported (that would
// make the op wait for the GPU). As on the CPU only N * C, H * W and
// oh * ow matter (the 3-d and adaptive pools' backward pass [planes, 1, 1,
// plane size] views).
absl::Status MaxPool2dWithIndicesBackward(const StridedView& grad,
                                          const StridedView& indices,
                                          const StridedView& grad_input,
                                          StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_MAX_POOL_H_

// 3-d average pooling, windowed and adaptive, and their backward on CUDA,
// with the contract of kernels/cpu/avg_pool3d.h (the same boxes and
// divisors). Contiguous [P, D, H, W] views; float32/float64, and int64 for
// a windowed forward (an int64 sum, wrapping, divided with truncation).
// Asynchronous on `stream`. Plain C++ header.
#ifndef TENSORD_KERNELS_CUDA_AVG_POOL3D_H_
#define TENSORD_KERNELS_CUDA_AVG_POOL3D_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

// kernels/cpu/avg_pool3d.h's AvgWindow3d, field for field.
struct AvgWindow3d {
  bool adaptive = false;
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
};

// One thread per output: its box summed, divided.
absl::Status AvgPool3d(const StridedView& in, const AvgWindow3d& w,
                       const StridedView& out, StreamHandle stream);

// grad_input zeroed, then one thread per output adds its share to its box
// (atomic adds: a float sum's last bits may vary from run to run).
absl::Status AvgPool3dBackward(const StridedView& grad, const AvgWindow3d& w,
                               const StridedView& grad_input,
                               StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_AVG_POOL3D_H_

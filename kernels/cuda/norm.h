// CUDA layer_norm and batch_norm kernels with the contracts of
// kernels/cpu/layer_norm.h and kernels/cpu/batch_norm.h: contiguous
// float32/float64 views, the same outputs (mean and rstd or biased var) and
// the same precision (sums in double, elementwise work in the element type,
// in the CPU kernels' order of operations). Optional views are empty (data ==
// nullptr). Plain C++ header; asynchronous on `stream`, no scratch memory.
#ifndef TENSORD_KERNELS_CUDA_NORM_H_
#define TENSORD_KERNELS_CUDA_NORM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

// x seen as [m, n]: y = (x - mean) * rstd * weight + bias per row; mean and
// rstd [m] written out. One block per row.
absl::Status LayerNormForward(const StridedView& x, int64_t m, int64_t n,
                              const StridedView& weight,
                              const StridedView& bias, double eps,
                              const StridedView& y, const StridedView& mean,
                              const StridedView& rstd, StreamHandle stream);

// dx (one block per row), dweight and dbias [n] (one thread per column,
// summing the rows in order: no atomics; zeros when m == 0).
absl::Status LayerNormBackward(const StridedView& dy, const StridedView& x,
                               int64_t m, int64_t n, const StridedView& mean,
                               const StridedView& rstd,
                               const StridedView& weight, const StridedView& dx,
                               const StridedView& dweight,
                               const StridedView& dbias, StreamHandle stream);

// x seen as [N, C, S]: the training forward, mean and biased var [C] written
// out. One block per channel.
absl::Status BatchNormForward(const StridedView& x, const StridedView& weight,
                              const StridedView& bias, double eps,
                              const StridedView& y, const StridedView& mean,
                              const StridedView& var, StreamHandle stream);

absl::Status BatchNormBackward(const StridedView& dy, const StridedView& x,
                               const StridedView& mean, const StridedView& var,
                               const StridedView& weight, double eps,
                               const StridedView& dx,
                               const StridedView& dweight,
                               const StridedView& dbias, StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_NORM_H_

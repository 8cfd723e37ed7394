// CUDA elementwise kernels. Plain C++ declarations (no CUDA types), so the
// runtime includes this header without nvcc; the definitions are in
// elementwise.cu and exist only in CUDA builds.
#ifndef TENSORD_KERNELS_CUDA_ELEMENTWISE_H_
#define TENSORD_KERNELS_CUDA_ELEMENTWISE_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

// out = a + alpha * b for float32 views of equal sizes (broadcast operands
// carry stride 0), launched asynchronously on `stream`.
absl::Status AddFloat32(const StridedView& a, const StridedView& b, float alpha,
                        const StridedView& out, StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_ELEMENTWISE_H_

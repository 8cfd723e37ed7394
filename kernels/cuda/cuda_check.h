// CUDA, cuBLAS and cuDNN return codes as absl::Status, in one macro
// (STYLE.md habit 3). Include only from code built with TENSORD_WITH_CUDA
// (this header pulls in the CUDA headers).
//
// Note [Sticky CUDA errors]: some errors (illegal address, launch failure,
// misaligned address, ...) poison the whole CUDA context: every later call in
// the process fails. ToStatus turns them into StickyDeviceError statuses
// (runtime/core/device_error.h), whose first occurrence runs the daemon's
// handler: it tells every session and exits with code 75 for the supervisor
// to restart it (Note [Sticky device errors]). Out of memory is not sticky:
// it is cleared and becomes RESOURCE_EXHAUSTED, the caching allocator's
// free-and-retry path.
#ifndef TENSORD_KERNELS_CUDA_CUDA_CHECK_H_
#define TENSORD_KERNELS_CUDA_CUDA_CHECK_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "absl/status/status.h"

namespace tensord {
namespace cuda {

inline constexpr int kStickyExitCode = 75;  // EX_TEMPFAIL: restart me

// Whether `err` leaves the CUDA context unusable.
bool IsStickyError(cudaError_t err);

// `what` names the call ("cudaMemcpyAsync(...)"), for the message.
absl::Status ToStatus(cudaError_t err, const char* what);
absl::Status ToStatus(cublasStatus_t err, const char* what);
absl::Status ToStatus(cudnnStatus_t err, const char* what);

// The status of the last kernel launch on this thread (cudaGetLastError).
absl::Status LaunchStatus(const char* kernel);

}  // namespace cuda
}  // namespace tensord

// Returns a Status from the enclosing function when a CUDA runtime, cuBLAS or
// cuDNN call fails (the overloads of ToStatus pick the library).
#define TD_CUDA_RETURN_IF_ERROR(expr)                                          \
  do {                                                                         \
    ::absl::Status _td_cuda_status = ::tensord::cuda::ToStatus((expr), #expr); \
    if (!_td_cuda_status.ok()) return _td_cuda_status;                         \
  } while (0)

#endif  // TENSORD_KERNELS_CUDA_CUDA_CHECK_H_

// Status conversion for CUDA libraries; Note [Sticky CUDA errors] in
// cuda_check.h.
#if TENSORD_WITH_CUDA
#include "kernels/cuda/cuda_check.h"

#include "absl/strings/str_cat.h"
#include "runtime/core/device_error.h"

namespace tensord {
namespace cuda {
bool IsStickyError(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

absl::Status ToStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  std::string msg = absl::StrCat(what, ": ", cudaGetErrorName(err), " (",
                                 cudaGetErrorString(err), ")");
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so the retry can succeed
    return absl::ResourceExhaustedError(msg);
  }
  if (IsStickyError(err)) {
    // Marked sticky; the first one in the process runs the daemon's handler
    // (Note [Sticky device errors] in runtime/core/device_error.h).
    int device = -1;
    cudaGetDevice(&device);  // still answers on a poisoned context
    return StickyDeviceError(absl::StrCat("cuda:", device), msg);
  }
  return absl::InternalError(msg);
}

absl::Status ToStatus(cublasStatus_t err, const char* what) {
  if (err == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  std::string msg = absl::StrCat(what, ": ", cublasGetStatusName(err), " (",
                                 cublasGetStatusString(err), ")");
  if (err == CUBLAS_STATUS_ALLOC_FAILED) {
    return absl::ResourceExhaustedError(msg);
  }
  if (err == CUBLAS_STATUS_EXECUTION_FAILED) {
    // Usually a sticky context error underneath: let the runtime say so.
    absl::Status sticky = ToStatus(cudaGetLastError(), what);
    if (!sticky.ok()) return sticky;
  }
  return absl::InternalError(msg);
}

absl::Status ToStatus(cudnnStatus_t err, const char* what) {
  if (err == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  std::string msg = absl::StrCat(what, ": ", cudnnGetErrorString(err));
  if (err == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      err == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    return absl::ResourceExhaustedError(msg);
  }
  // cuDNN 9 groups codes by thousands: 2xxx bad parameter, 3xxx unsupported.
  const int category = static_cast<int>(err) / 1000;
  if (category == 2 || category == 3) {
    return absl::UnimplementedError(msg);
  }
  return absl::InternalError(msg);
}

absl::Status LaunchStatus(const char* kernel) {
  return ToStatus(cudaGetLastError(), kernel);
}

}  // namespace cuda
}  // namespace tensord
#endif  // TENSORD_WITH_CUDA

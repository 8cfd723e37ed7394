// Status conversion for CUDA libraries; Note [Sticky CUDA errors] in
// cuda_check.h.
#if TENSORD_WITH_CUDA
#include "kernels/cuda/cuda_check.h"

#include <atomic>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace cuda {
namespace {

void DefaultStickyHandler(const absl::Status& status) {
  spdlog::critical(
      "sticky CUDA error, the CUDA context is unusable: {}; exiting with code "
      "{} so that the supervisor restarts tensord",
      std::string(status.message()), kStickyExitCode);
  spdlog::shutdown();
  std::_Exit(kStickyExitCode);
}

std::atomic<StickyErrorHandler> g_handler{DefaultStickyHandler};
std::atomic<bool> g_sticky_seen{false};

}  // namespace

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

void SetStickyErrorHandler(StickyErrorHandler handler) {
  g_handler.store(handler != nullptr ? handler : DefaultStickyHandler);
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
    absl::Status status = absl::InternalError(msg);
    // Only the first thread reports; the others wait for the exit.
    if (!g_sticky_seen.exchange(true)) g_handler.load()(status);
    return status;
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

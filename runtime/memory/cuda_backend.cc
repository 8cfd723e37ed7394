// CUDA device and pinned-host backends: a direct translation of the Backend
// virtuals to the CUDA runtime, with every cudaError_t turned into a Status
// in one place (CudaStatus). Out-of-memory errors become RESOURCE_EXHAUSTED
// so the caching allocator frees its cache and retries; everything else is
// INTERNAL (a sticky error poisons the context: see DESIGN.md).
#include "runtime/memory/cuda_backend.h"

#include <cstring>
#include <mutex>  // NOLINT: std::call_once
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/memory/host_backend.h"

#if TENSORD_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace tensord {

#if TENSORD_WITH_CUDA
namespace {

absl::Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  std::string msg = absl::StrCat(what, ": ", cudaGetErrorName(err), " (",
                                 cudaGetErrorString(err), ")");
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it for the retry
    return absl::ResourceExhaustedError(msg);
  }
  return absl::InternalError(msg);
}

// Events and device selection shared by both backends.
class CudaBackendBase : public Backend {
 public:
  explicit CudaBackendBase(int device) : device_(device) {}

  absl::StatusOr<EventHandle> RecordEvent(StreamHandle stream) override {
    absl::Status s = CudaStatus(cudaSetDevice(device_), "cudaSetDevice");
    if (!s.ok()) return s;
    cudaEvent_t event;
    s = CudaStatus(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                   "cudaEventCreateWithFlags");
    if (!s.ok()) return s;
    s = CudaStatus(cudaEventRecord(event, static_cast<cudaStream_t>(stream)),
                   "cudaEventRecord");
    if (!s.ok()) {
      cudaEventDestroy(event);
      return s;
    }
    return static_cast<EventHandle>(event);
  }

  absl::StatusOr<bool> EventCompleted(EventHandle event) override {
    cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (err == cudaErrorNotReady) {
      cudaGetLastError();  // NotReady is reported, not an error
      return false;
    }
    absl::Status s = CudaStatus(err, "cudaEventQuery");
    if (!s.ok()) return s;
    return true;
  }

  void DestroyEvent(EventHandle event) override {
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
  }

 protected:
  const int device_;
};

class CudaDeviceBackend : public CudaBackendBase {
 public:
  CudaDeviceBackend(int device, size_t capacity)
      : CudaBackendBase(device), capacity_(capacity) {}

  std::string DeviceName() const override {
    return absl::StrCat("cuda:", device_);
  }

  absl::StatusOr<void*> Malloc(size_t bytes) override {
    absl::Status s = CudaStatus(cudaSetDevice(device_), "cudaSetDevice");
    if (!s.ok()) return s;
    void* ptr = nullptr;
    s = CudaStatus(cudaMalloc(&ptr, bytes), "cudaMalloc");
    if (!s.ok()) return s;
    // cudaMalloc does not clear memory, and it may hand back pages another
    // tenant's segment used: zero them (the Backend contract; Note [Scrub]).
    // On a stream of the backend's own that does not synchronise with the
    // legacy default stream: a plain cudaMemset would, and so wait for every
    // session's queued kernels (the session streams are blocking ones).
    s = ScrubStream();
    if (s.ok()) {
      s = CudaStatus(cudaMemsetAsync(ptr, 0, bytes, scrub_), "cudaMemsetAsync");
    }
    if (s.ok()) {
      s = CudaStatus(cudaStreamSynchronize(scrub_), "cudaStreamSynchronize");
    }
    if (!s.ok()) {
      cudaFree(ptr);
      return s;
    }
    return ptr;
  }

  void Free(void* ptr, size_t) override {
    cudaSetDevice(device_);
    cudaFree(ptr);
  }

  size_t Capacity() const override { return capacity_; }

  absl::Status Zero(void* ptr, size_t bytes, StreamHandle stream) override {
    absl::Status s = CudaStatus(cudaSetDevice(device_), "cudaSetDevice");
    if (!s.ok()) return s;
    return CudaStatus(
        cudaMemsetAsync(ptr, 0, bytes, static_cast<cudaStream_t>(stream)),
        "cudaMemsetAsync");
  }

 private:
  // Created on first use (the device is current), kept for the process.
  absl::Status ScrubStream() {
    std::call_once(scrub_once_, [this] {
      scrub_status_ =
          CudaStatus(cudaStreamCreateWithFlags(&scrub_, cudaStreamNonBlocking),
                     "cudaStreamCreateWithFlags");
    });
    return scrub_status_;
  }

  const size_t capacity_;
  std::once_flag scrub_once_;
  absl::Status scrub_status_;
  cudaStream_t scrub_ = nullptr;
};

class PinnedHostBackend : public CudaBackendBase {
 public:
  explicit PinnedHostBackend(int device) : CudaBackendBase(device) {}

  std::string DeviceName() const override { return "cuda_host"; }

  absl::StatusOr<void*> Malloc(size_t bytes) override {
    absl::Status s = CudaStatus(cudaSetDevice(device_), "cudaSetDevice");
    if (!s.ok()) return s;
    void* ptr = nullptr;
    s = CudaStatus(cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable),
                   "cudaHostAlloc");
    if (!s.ok()) return s;
    std::memset(ptr, 0, bytes);
    return ptr;
  }

  void Free(void* ptr, size_t) override { cudaFreeHost(ptr); }

  size_t Capacity() const override { return PhysicalMemoryBytes(); }

  // The block is free (its events completed), so no copy still reads it.
  absl::Status Zero(void* ptr, size_t bytes, StreamHandle) override {
    std::memset(ptr, 0, bytes);
    return absl::OkStatus();
  }
};

}  // namespace

bool CudaBackendsBuilt() { return true; }

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device) {
  absl::Status s = CudaStatus(cudaSetDevice(device), "cudaSetDevice");
  if (!s.ok()) return s;
  size_t free_bytes = 0, total_bytes = 0;
  s = CudaStatus(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (!s.ok()) return s;
  return std::unique_ptr<Backend>(
      std::make_unique<CudaDeviceBackend>(device, total_bytes));
}

absl::StatusOr<std::unique_ptr<Backend>> MakePinnedHostBackend(int device) {
  absl::Status s = CudaStatus(cudaSetDevice(device), "cudaSetDevice");
  if (!s.ok()) return s;
  return std::unique_ptr<Backend>(std::make_unique<PinnedHostBackend>(device));
}

#else  // !TENSORD_WITH_CUDA

bool CudaBackendsBuilt() { return false; }

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device) {
  return absl::UnimplementedError(absl::StrCat(
      "cuda:", device, " is unavailable: tensord was built without CUDA"));
}

absl::StatusOr<std::unique_ptr<Backend>> MakePinnedHostBackend(int) {
  return absl::UnimplementedError(
      "pinned host memory is unavailable: tensord was built without CUDA");
}

#endif  // TENSORD_WITH_CUDA

absl::StatusOr<std::unique_ptr<CachingAllocator>> MakeCudaCachingAllocator(
    int device) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = MakeCudaBackend(device);
  if (!backend.ok()) return backend.status();
  return std::make_unique<CachingAllocator>(std::move(*backend));
}

absl::StatusOr<std::unique_ptr<CachingAllocator>>
MakePinnedHostCachingAllocator(int device) {
  absl::StatusOr<std::unique_ptr<Backend>> backend =
      MakePinnedHostBackend(device);
  if (!backend.ok()) return backend.status();
  return std::make_unique<CachingAllocator>(std::move(*backend));
}

}  // namespace tensord

// CUDA devices. Compiled everywhere; the CUDA parts only with
// TENSORD_WITH_CUDA (set when the toolkit was found at build time). Without
// a driver or a GPU at run time, discovery returns none and says why, so a
// CUDA build still starts and serves the CPU.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/core/device_error.h"
#include "runtime/cuda_discovery.h"

#if TENSORD_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"
#include "runtime/completion_queue.h"
#include "runtime/core/status_macros.h"
#include "runtime/cuda_streams.h"
#include "runtime/memory/cuda_backend.h"
#include "spdlog/spdlog.h"
#endif

namespace tensord {

#if TENSORD_WITH_CUDA
namespace {

// A host function (cudaLaunchHostFunc) must not call CUDA: it only wakes the
// completion thread, which queries the event (Note [Async downloads]).
void CUDART_CB WakeCompletions(void* queue) {
  static_cast<CompletionQueue*>(queue)->Notify();
}

// Note [Session streams] (device.h): streams are created with the blocking
// flag on purpose. Until every caller passes the session's stream, work that
// goes to the legacy default stream (copies passed stream nullptr) is then
// still ordered after the sessions' queued kernels.
class CudaDevice : public Device {
 public:
  // `staging` (pinned host memory) may be null: downloads then copy
  // synchronously.
  CudaDevice(int index, const cudaDeviceProp& prop,
             std::unique_ptr<CachingAllocator> allocator,
             std::unique_ptr<CachingAllocator> staging)
      : index_(index),
        allocator_(std::move(allocator)),
        streams_(index),
        staging_(std::move(staging)) {
    desc_.name = absl::StrCat("cuda:", index);
    desc_.kind = DeviceKind::kCuda;
    desc_.description = prop.name;
    desc_.total_memory = prop.totalGlobalMem;
    desc_.compute_capability = absl::StrCat(prop.major, ".", prop.minor);
  }
  ~CudaDevice() override {
    // Pending host functions call into completions_: let them run first
    // (streams_ then destroys the session streams and events).
    cudaSetDevice(index_);
    cudaDeviceSynchronize();
  }
  const DeviceDescription& description() const override { return desc_; }
  CachingAllocator* allocator() override { return allocator_.get(); }

  // Pageable sources are staged by the driver before cudaMemcpyAsync
  // returns, so `src` may be reused at once and the executor does not wait
  // for the transfer itself.
  absl::Status CopyFromHost(void* dst, const void* src, size_t bytes,
                            StreamHandle stream) override {
    if (bytes == 0) return absl::OkStatus();
    TD_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
    TD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes,
                                            cudaMemcpyHostToDevice,
                                            static_cast<cudaStream_t>(stream)));
    return absl::OkStatus();
  }
  // A value read: waits for the copy (and the work queued before it).
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes,
                          StreamHandle stream) override {
    if (bytes == 0) return absl::OkStatus();
    TD_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
    auto s = static_cast<cudaStream_t>(stream);
    TD_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
    TD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    return absl::OkStatus();
  }

  CachingAllocator* staging_allocator() override { return staging_.get(); }
  absl::StatusOr<StagingBuffer> AllocateStaging(size_t bytes) override {
    if (staging_ == nullptr) return Device::AllocateStaging(bytes);
    return StagingBuffer::Allocate(staging_.get(), bytes);
  }

  // Note [Async downloads]: copy, event, host function; the completion
  // thread polls the event and runs `on_done`.
  void CopyToHostAsync(void* dst, const void* src, size_t bytes,
                       StreamHandle stream,
                       std::function<void(absl::Status)> on_done) override {
    absl::StatusOr<cudaEvent_t> event =
        EnqueueCopy(dst, src, bytes, cudaMemcpyDeviceToHost,
                    static_cast<cudaStream_t>(stream));
    if (!event.ok()) return on_done(event.status());
    Watch(*event, std::move(on_done));
  }
  // Note [Async uploads]: the same from a pinned buffer; `on_done` returns
  // the buffer to the staging cache once the event says the copy is done.
  absl::Status CopyFromHostAsync(
      void* dst, const void* src, size_t bytes, StreamHandle stream,
      std::function<void(absl::Status)> on_done) override {
    TD_ASSIGN_OR_RETURN(cudaEvent_t event,
                        EnqueueCopy(dst, src, bytes, cudaMemcpyHostToDevice,
                                    static_cast<cudaStream_t>(stream)));
    Watch(event, std::move(on_done));
    return absl::OkStatus();
  }
  absl::Status Synchronize(StreamHandle stream) override {
    TD_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
    if (stream == nullptr) {
      TD_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
    } else {
      TD_CUDA_RETURN_IF_ERROR(
          cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
    }
    return absl::OkStatus();
  }

  // Also makes this device current on the calling thread (the executor),
  // so the kernels launched next run here.
  using Device::SessionStream;
  absl::StatusOr<StreamHandle> SessionStream(uint64_t session,
                                             uint32_t stream_id) override {
    return streams_.Stream(session, stream_id);
  }
  absl::Status RecordSessionEvent(uint64_t session, uint64_t event,
                                  StreamHandle stream) override {
    return streams_.Record(session, event, stream);
  }
  absl::Status WaitSessionEvent(uint64_t session, uint64_t event,
                                StreamHandle stream) override {
    return streams_.Wait(session, event, stream);
  }
  void ReleaseSessionEvent(uint64_t session, uint64_t event) override {
    streams_.ReleaseEvent(session, event);
  }
  void ReleaseSessionStreams(uint64_t session) override {
    streams_.Release(session);
  }
  absl::Status SynchronizeSession(uint64_t session) override {
    TD_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
    return streams_.Synchronize(session);
  }

 private:
  // An asynchronous copy and an event after it on `s`. On an error after
  // the copy was queued, waits for it: the caller frees the host buffer when
  // told of the error.
  absl::StatusOr<cudaEvent_t> EnqueueCopy(void* dst, const void* src,
                                          size_t bytes, cudaMemcpyKind kind,
                                          cudaStream_t s) {
    TD_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
    if (bytes > 0) {
      TD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, kind, s));
    }
    cudaEvent_t event = nullptr;
    absl::Status status =
        cuda::ToStatus(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                       "cudaEventCreateWithFlags");
    if (status.ok()) {
      status = cuda::ToStatus(cudaEventRecord(event, s), "cudaEventRecord");
      if (!status.ok()) cudaEventDestroy(event);
    }
    if (!status.ok()) {
      cudaStreamSynchronize(s);
      return status;
    }
    // Only a wake-up: if it cannot be queued, the poll period still finds
    // the event complete.
    if (cudaLaunchHostFunc(s, WakeCompletions, &completions_) != cudaSuccess) {
      cudaGetLastError();
    }
    return event;
  }
  // Hands `event` to the completion thread, which runs `on_done` once it
  // has completed (or failed) and destroys it.
  void Watch(cudaEvent_t event, std::function<void(absl::Status)> on_done) {
    const int index = index_;
    completions_.Add(
        [event, index]() -> absl::StatusOr<bool> {
          TD_CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
          const cudaError_t err = cudaEventQuery(event);
          if (err == cudaErrorNotReady) {
            cudaGetLastError();  // NotReady is an answer, not an error
            return false;
          }
          TD_CUDA_RETURN_IF_ERROR(err);
          return true;
        },
        [event, on_done = std::move(on_done)](absl::Status s) {
          cudaEventDestroy(event);
          on_done(std::move(s));
        });
  }

  const int index_;
  DeviceDescription desc_;
  std::unique_ptr<CachingAllocator> allocator_;
  CudaSessionStreams streams_;  // Note [Session streams], [Session events]
  std::unique_ptr<CachingAllocator> staging_;  // pinned; may be null
  // Last: destroyed first, after waiting for its entries, whose `done`s free
  // staging buffers.
  CompletionQueue completions_;
};

}  // namespace

std::vector<std::unique_ptr<Device>> DiscoverCudaDevices(
    std::string* why_none) {
  std::vector<std::unique_ptr<Device>> devices;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    *why_none =
        absl::StrCat("cudaGetDeviceCount failed: ", cudaGetErrorString(err));
    return devices;
  }
  if (count == 0) {
    *why_none = "the CUDA driver reports no devices";
    return devices;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop;
    std::memset(&prop, 0, sizeof(prop));
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    auto allocator = MakeCudaCachingAllocator(i);
    if (!allocator.ok()) {
      *why_none = std::string(allocator.status().message());
      continue;
    }
    auto staging = MakePinnedHostCachingAllocator(i);
    if (!staging.ok()) {
      spdlog::warn("cuda:{}: no pinned staging memory ({}); downloads wait", i,
                   staging.status().ToString());
    }
    devices.push_back(std::make_unique<CudaDevice>(
        i, prop, *std::move(allocator),
        staging.ok() ? *std::move(staging) : nullptr));
  }
  return devices;
}

bool CudaBuilt() { return true; }

void SetFatalDeviceErrorHandler(FatalDeviceErrorHandler handler) {
  SetStickyErrorHandler(handler);  // runtime/core: CUDA's checks report there
}

#else  // !TENSORD_WITH_CUDA

std::vector<std::unique_ptr<Device>> DiscoverCudaDevices(
    std::string* why_none) {
  *why_none =
      "this tensord was built without the CUDA toolkit (rebuild on a machine "
      "with /usr/local/cuda or $CUDA_PATH)";
  return {};
}

bool CudaBuilt() { return false; }

void SetFatalDeviceErrorHandler(FatalDeviceErrorHandler handler) {
  SetStickyErrorHandler(handler);
}

#endif  // TENSORD_WITH_CUDA

}  // namespace tensord

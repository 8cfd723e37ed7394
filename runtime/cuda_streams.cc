// CudaSessionStreams (cuda_streams.h). Compiled in every build; the body
// only with TENSORD_WITH_CUDA.
#include "runtime/cuda_streams.h"

#if TENSORD_WITH_CUDA
#include <cuda_runtime.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"

namespace tensord {

CudaSessionStreams::~CudaSessionStreams() {
  MutexLock lock(&mu_);
  if (!sessions_.empty()) cudaSetDevice(index_);
  for (auto& [session, entries] : sessions_) Destroy(entries);
}

void CudaSessionStreams::Destroy(PerSession& entries) {
  // Both return at once; queued work and pending records still complete.
  for (auto& [id, event] : entries.events) {
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
  }
  for (auto& [id, stream] : entries.streams) {
    cudaStreamDestroy(static_cast<cudaStream_t>(stream));
  }
  entries.events.clear();
  entries.streams.clear();
}

absl::StatusOr<StreamHandle> CudaSessionStreams::Stream(uint64_t session,
                                                        uint32_t stream_id) {
  TD_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
  MutexLock lock(&mu_);
  PerSession& entries = sessions_[session];
  auto it = entries.streams.find(stream_id);
  if (it != entries.streams.end()) return it->second;
  cudaStream_t stream = nullptr;
  // cudaStreamDefault: blocking (Note [Session streams] in cuda_device.cc).
  TD_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithFlags(&stream, cudaStreamDefault));
  entries.streams.emplace(stream_id, stream);
  return static_cast<StreamHandle>(stream);
}

absl::Status CudaSessionStreams::Record(uint64_t session, uint64_t event,
                                        StreamHandle stream) {
  TD_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
  MutexLock lock(&mu_);
  PerSession& entries = sessions_[session];
  auto it = entries.events.find(event);
  if (it == entries.events.end()) {
    cudaEvent_t created = nullptr;
    TD_CUDA_RETURN_IF_ERROR(
        cudaEventCreateWithFlags(&created, cudaEventDisableTiming));
    it = entries.events.emplace(event, created).first;
  }
  TD_CUDA_RETURN_IF_ERROR(cudaEventRecord(static_cast<cudaEvent_t>(it->second),
                                          static_cast<cudaStream_t>(stream)));
  return absl::OkStatus();
}

absl::Status CudaSessionStreams::Wait(uint64_t session, uint64_t event,
                                      StreamHandle stream) {
  TD_CUDA_RETURN_IF_ERROR(cudaSetDevice(index_));
  MutexLock lock(&mu_);
  void* recorded = nullptr;
  auto entries = sessions_.find(session);
  if (entries != sessions_.end()) {
    auto it = entries->second.events.find(event);
    if (it != entries->second.events.end()) recorded = it->second;
  }
  if (recorded == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("event ", event, " was never recorded on cuda:", index_));
  }
  TD_CUDA_RETURN_IF_ERROR(
      cudaStreamWaitEvent(static_cast<cudaStream_t>(stream),
                          static_cast<cudaEvent_t>(recorded), 0));
  return absl::OkStatus();
}

void CudaSessionStreams::ReleaseEvent(uint64_t session, uint64_t event) {
  MutexLock lock(&mu_);
  auto entries = sessions_.find(session);
  if (entries == sessions_.end()) return;
  auto it = entries->second.events.find(event);
  if (it == entries->second.events.end()) return;
  cudaSetDevice(index_);
  cudaEventDestroy(static_cast<cudaEvent_t>(it->second));
  entries->second.events.erase(it);
}

void CudaSessionStreams::Release(uint64_t session) {
  MutexLock lock(&mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  cudaSetDevice(index_);
  Destroy(it->second);
  sessions_.erase(it);
}

absl::Status CudaSessionStreams::Synchronize(uint64_t session) {
  std::vector<cudaStream_t> streams;
  {
    MutexLock lock(&mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return absl::OkStatus();  // nothing queued
    for (const auto& [id, stream] : it->second.streams) {
      streams.push_back(static_cast<cudaStream_t>(stream));
    }
  }
  // The session's own executor is the caller, and only it (or the session's
  // end, after it) releases these streams.
  for (cudaStream_t s : streams) {
    TD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  }
  return absl::OkStatus();
}

}  // namespace tensord
#endif  // TENSORD_WITH_CUDA

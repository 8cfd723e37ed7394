// The streams and events of every session on one CUDA device (Note [Session
// streams] and Note [Session events] in device.h): CudaDevice delegates to
// one of these. Plain C++ header; the definitions exist only in CUDA builds.
//
// Keyed by (session, stream id) and (session, event id), both created on
// first use: streams with the blocking flag (ordered with the legacy default
// stream, which uploads and in-place copies still use), events with
// cudaEventDisableTiming (ordering only, the cheapest kind).
//
// Thread safety: every method may be called concurrently (each session's
// executor calls it for its own entries; session end and the destructor
// release them). One Mutex guards the maps; no CUDA call blocks under it.
#ifndef TENSORD_RUNTIME_CUDA_STREAMS_H_
#define TENSORD_RUNTIME_CUDA_STREAMS_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/core/mutex.h"
#include "runtime/core/strided.h"

namespace tensord {

class CudaSessionStreams {
 public:
  explicit CudaSessionStreams(int device_index) : index_(device_index) {}
  // Destroys every stream and event (queued work still completes).
  ~CudaSessionStreams();
  CudaSessionStreams(const CudaSessionStreams&) = delete;
  CudaSessionStreams& operator=(const CudaSessionStreams&) = delete;

  // Stream `stream_id` of `session`, created on first use. Also makes the
  // device current on the calling thread.
  absl::StatusOr<StreamHandle> Stream(uint64_t session, uint32_t stream_id);
  // cudaEventRecord of `session`'s event `event` (created on first use) on
  // `stream`.
  absl::Status Record(uint64_t session, uint64_t event, StreamHandle stream);
  // cudaStreamWaitEvent: `stream` waits for the event's last record.
  // FAILED_PRECONDITION when this device never recorded it.
  absl::Status Wait(uint64_t session, uint64_t event, StreamHandle stream);
  // Destroys one event of `session` (no-op when unknown).
  void ReleaseEvent(uint64_t session, uint64_t event);
  // Destroys `session`'s streams and events.
  void Release(uint64_t session);
  // cudaStreamSynchronize of each of `session`'s streams (outside the lock).
  absl::Status Synchronize(uint64_t session);

 private:
  struct PerSession {
    absl::flat_hash_map<uint32_t, void*> streams;  // cudaStream_t
    absl::flat_hash_map<uint64_t, void*> events;   // cudaEvent_t
  };
  static void Destroy(PerSession& entries);

  const int index_;
  Mutex mu_;
  absl::flat_hash_map<uint64_t, PerSession> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CUDA_STREAMS_H_

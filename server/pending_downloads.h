// The session side of Note [Async downloads] (runtime/completion_queue.h):
// downloads whose device copy is still in flight, and the continuations that
// send their data once it has landed in host memory.
//
// A Get of a device tensor registers a continuation with Track and passes
// the returned callback to Device::CopyToHostAsync; the device calls it from
// its completion thread, which only queues the status and wakes the
// executor. Continuations run on the session's executor (RunFinished,
// WaitAll), so frames are still sent from the executor (FrameSink's
// contract) and the tensors and staging buffers they hold are released
// there, never on a device thread.
//
// Thread safety: the callbacks Track returns may run on any thread, once
// each; every other method belongs to the executor. Ownership: continuations
// are owned here until they run; the callbacks share the state, so one that
// runs late touches no freed memory.
#ifndef TENSORD_SERVER_PENDING_DOWNLOADS_H_
#define TENSORD_SERVER_PENDING_DOWNLOADS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "runtime/core/mutex.h"

namespace tensord {

class PendingDownloads {
 public:
  using Continuation = std::function<void(const absl::Status&)>;

  PendingDownloads();
  ~PendingDownloads();  // drops continuations that never ran
  PendingDownloads(const PendingDownloads&) = delete;
  PendingDownloads& operator=(const PendingDownloads&) = delete;

  // Called, from the finishing thread and under an internal lock, whenever
  // a download finishes: it must only signal (the session wakes its idle
  // executor). Cleared with nullptr before its target goes away.
  void SetWake(std::function<void()> wake);

  // Registers a download; `then` runs on the executor with the copy's
  // status. The result is the callback to hand the device (call it once).
  std::function<void(absl::Status)> Track(Continuation then);

  // Whether a finished download waits for RunFinished (cheap: an atomic).
  bool has_finished() const { return state_->finished_count.load() > 0; }
  // Downloads tracked whose continuation has not run.
  size_t outstanding() const;
  // Runs the continuations of the downloads finished so far, in the order
  // they finished.
  void RunFinished();
  // Waits until every tracked download has finished, running each
  // continuation as it does (Sync and session end: data before SyncDone).
  void WaitAll();

 private:
  struct State {
    Mutex mu;
    uint64_t next_id ABSL_GUARDED_BY(mu) = 0;
    absl::flat_hash_map<uint64_t, Continuation> waiting ABSL_GUARDED_BY(mu);
    std::deque<std::pair<uint64_t, absl::Status>> finished ABSL_GUARDED_BY(mu);
    std::atomic<size_t> finished_count{0};
    std::function<void()> wake ABSL_GUARDED_BY(mu);
  };
  // Takes the next finished continuation, if any.
  bool PopFinished(Continuation* then, absl::Status* status);

  const std::shared_ptr<State> state_;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_PENDING_DOWNLOADS_H_

// CompletionQueue: a daemon thread that watches asynchronous device work
// (copies, in practice) and calls each one's `done` once it has finished, so
// that the thread that queued the work never waits for it.
//
// Note [Async downloads]: a Get of a device tensor is enqueued on the
// session's stream as a copy into pinned staging memory followed by an event
// (Device::CopyToHostAsync). The device adds the event here; this queue's
// thread polls it and hands the result to the server, which sends the data
// from the session's executor (server/pending_downloads.h). The executor
// goes on with the session's later commands at once; stream order still
// makes the copy read the value the tensor had at the Get's position. On
// CUDA a host function launched after the event (cudaLaunchHostFunc) calls
// Notify, which only signals a condition variable: a host function must never
// call CUDA itself. Polling on a short period is the backstop for work whose
// host function never runs (a context lost to a sticky error still reports
// that error through the poll).
//
// Thread safety: Add and Notify may be called from any thread, Notify also
// from a CUDA host function. `poll` and `done` run on the queue's thread;
// `done` must not block for long (it hands work off), and may call Add.
// Ownership: the queue owns its thread; destruction waits until every entry
// added so far has completed and its `done` has run.
#ifndef TENSORD_RUNTIME_COMPLETION_QUEUE_H_
#define TENSORD_RUNTIME_COMPLETION_QUEUE_H_

#include <functional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/core/mutex.h"

namespace tensord {

class CompletionQueue {
 public:
  // Whether the work finished (true), is still running (false), or failed.
  // Never blocks.
  using PollFn = std::function<absl::StatusOr<bool>()>;
  // OK, or the failure `poll` returned. Called exactly once.
  using DoneFn = std::function<void(absl::Status)>;

  // `poll_period`: how often pending entries are polled without a Notify.
  explicit CompletionQueue(absl::Duration poll_period = absl::Milliseconds(1));
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  void Add(PollFn poll, DoneFn done);
  // Something may have completed: poll now.
  void Notify();
  // Entries added whose `done` has not begun (for tests and stats).
  size_t pending() const;

 private:
  struct Entry {
    PollFn poll;
    DoneFn done;
  };
  void Loop();

  const absl::Duration poll_period_;
  mutable Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // taken out for polling
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // the destructor waits
  std::thread thread_;  // last: starts after every member is ready
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_COMPLETION_QUEUE_H_

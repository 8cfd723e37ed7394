// Calls run at a later time on one thread of their own: the gRPC adapter's
// Hello deadlines and held-back refusals (Note [Failed authentications]),
// so that waiting costs no gRPC thread. Calls must be short and must not
// call back into DelayedCalls. Thread-safe.
#ifndef TENSORD_SERVER_DELAYED_CALLS_H_
#define TENSORD_SERVER_DELAYED_CALLS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/time/time.h"
#include "runtime/core/mutex.h"

namespace tensord {

class DelayedCalls {
 public:
  DelayedCalls();
  ~DelayedCalls();  // drops the calls not yet run, joins the thread

  // Runs `call` at `when` (at once if past); returns an id for Cancel.
  uint64_t Schedule(absl::Time when, std::function<void()> call);
  // Forgets call `id` if it has not started.
  void Cancel(uint64_t id);
  size_t pending() const;

 private:
  void Loop();

  mutable Mutex mu_;
  std::map<std::pair<absl::Time, uint64_t>, std::function<void()>> calls_
      ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, absl::Time> when_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace tensord

#endif  // TENSORD_SERVER_DELAYED_CALLS_H_

#include "kernels/cpu/parallel.h"

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/cpu/compute_gate.h"
#include "runtime/core/mutex.h"

namespace tensord {
namespace cpu {
namespace {

// A fixed pool of workers pulling closures from one queue.
class Pool {
 public:
  explicit Pool(int n) {
    for (int i = 0; i < n; ++i) workers_.emplace_back([this] { Loop(); });
  }
  // Workers are detached at exit: the pool lives for the process.
  ~Pool() = delete;

  void Schedule(std::function<void()> fn) {
    MutexLock lock(&mu_);
    queue_.push_back(std::move(fn));
  }
  int size() const { return static_cast<int>(workers_.size()); }

 private:
  void Loop() {
    MarkGateWorker();  // runs work for the gate's holder only
    while (true) {
      std::function<void()> fn;
      {
        MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](std::vector<std::function<void()>>* q) { return !q->empty(); },
            &queue_));
        fn = std::move(queue_.back());
        queue_.pop_back();
      }
      fn();
    }
  }

  Mutex mu_;
  std::vector<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_;
};

int ConfiguredThreads() {
  if (const char* env = std::getenv("TENSORD_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

Pool& GetPool() {
  // Leaked on purpose: kernels may run during static destruction of others.
  static Pool* pool = new Pool(ConfiguredThreads() - 1);
  return *pool;
}

thread_local bool in_parallel_region = false;

// Marks the calling thread as running a ParallelFor body for its lifetime.
class RegionScope {
 public:
  RegionScope() : outer_(in_parallel_region) { in_parallel_region = true; }
  ~RegionScope() { in_parallel_region = outer_; }
  RegionScope(const RegionScope&) = delete;
  RegionScope& operator=(const RegionScope&) = delete;

 private:
  const bool outer_;
};

}  // namespace

int NumThreads() { return GetPool().size() + 1; }

bool InParallelRegion() { return in_parallel_region; }

void ParallelForSlots(int64_t n, int64_t work_per_item,
                      absl::FunctionRef<void(int, int64_t, int64_t)> fn) {
  if (n <= 0) return;
  const int64_t work = n * std::max<int64_t>(work_per_item, 1);
  const int threads = NumThreads();
  const int64_t chunks =
      threads == 1 || in_parallel_region || n == 1 || work < kParallelGrain
          ? 1
          : std::min<int64_t>({threads, n, work / (kParallelGrain / 2)});
  if (chunks <= 1) {
    fn(0, 0, n);
    return;
  }
  const int64_t step = (n + chunks - 1) / chunks;
  WideKernelScope wide;  // Note [CPU compute gate]
  BlockingCounter done(static_cast<int>(chunks - 1));
  for (int64_t c = 1; c < chunks; ++c) {
    const int64_t begin = c * step, end = std::min(n, begin + step);
    const int slot = static_cast<int>(c);
    GetPool().Schedule([&fn, &done, slot, begin, end] {
      if (begin < end) {
        RegionScope region;
        fn(slot, begin, end);
      }
      done.DecrementCount();
    });
  }
  {
    RegionScope region;
    fn(0, 0, std::min(n, step));  // the calling thread takes the first range
  }
  done.Wait();
}

namespace {

// ParallelForClaimed's state, shared with the workers' closures, which may
// run after the call returned (a worker that was late). `fn` points into the
// caller's frame: a worker uses it only after entering while the call was
// still open, and the caller, once every item is claimed, closes the call and
// waits for the workers that entered.
struct ClaimState {
  std::atomic<int64_t> next{0};
  int64_t n = 0;
  absl::FunctionRef<void(int64_t)>* fn = nullptr;
  Mutex mu;
  bool closed ABSL_GUARDED_BY(mu) = false;
  int active ABSL_GUARDED_BY(mu) = 0;

  void RunItems() {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      (*fn)(i);
    }
  }
};

}  // namespace

void ParallelForClaimed(int64_t n, absl::FunctionRef<void(int64_t)> fn) {
  if (n <= 0) return;
  const int threads = NumThreads();
  if (threads == 1 || in_parallel_region || n == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  WideKernelScope wide;  // Note [CPU compute gate]
  auto state = std::make_shared<ClaimState>();
  state->n = n;
  state->fn = &fn;
  const int64_t helpers = std::min<int64_t>(threads - 1, n - 1);
  for (int64_t h = 0; h < helpers; ++h) {
    GetPool().Schedule([state] {
      {
        MutexLock lock(&state->mu);
        if (state->closed) return;  // the call returned: fn may be gone
        ++state->active;
      }
      {
        RegionScope region;
        state->RunItems();
      }
      MutexLock lock(&state->mu);
      --state->active;
    });
  }
  {
    RegionScope region;
    state->RunItems();
  }
  // Every item is claimed: admit no more workers, wait for those inside.
  ClaimState* s = state.get();
  MutexLock lock(&s->mu);
  s->closed = true;
  s->mu.Await(absl::Condition(
      +[](ClaimState* c) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return c->active == 0;
      },
      s));
}

void ParallelFor(int64_t n, int64_t work_per_item,
                 absl::FunctionRef<void(int64_t, int64_t)> fn) {
  ParallelForSlots(n, work_per_item,
                   [&fn](int, int64_t begin, int64_t end) { fn(begin, end); });
}

}  // namespace cpu
}  // namespace tensord

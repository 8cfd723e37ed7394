#include "kernels/cpu/parallel.h"

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/cpu/compute_gate.h"
#include "runtime/core/mutex.h"

namespace tensord {
namespace cpu {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// How long an idle worker polls for work before sleeping (Note [Warm
// workers]): TENSORD_POOL_SPIN_US, 0 (sleep at once) by default.
int64_t SpinUs() {
  static const int64_t us = [] {
    const char* env = std::getenv("TENSORD_POOL_SPIN_US");
    return env != nullptr ? std::max<int64_t>(0, std::atoll(env)) : 0;
  }();
  return us;
}

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
    queued_.fetch_add(1, std::memory_order_release);
  }
  int size() const { return static_cast<int>(workers_.size()); }

 private:
  void Loop() {
    MarkGateWorker();  // runs work for the gate's holder only
    while (true) {
      SpinForWork();
      std::function<void()> fn;
      {
        MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](std::vector<std::function<void()>>* q) { return !q->empty(); },
            &queue_));
        fn = std::move(queue_.back());
        queue_.pop_back();
        queued_.fetch_sub(1, std::memory_order_relaxed);
      }
      fn();
    }
  }

  // Note [Warm workers]: with TENSORD_POOL_SPIN_US set, a worker polls the
  // queue that long after its last closure before it sleeps on the mutex. A
  // kernel's ParallelFor follows the last one within microseconds while a
  // graph's ops run back to back, and a sleeping worker can wake late when
  // another process holds its core (the Python client beside the daemon on a
  // 2-core VM). Off by default: on an oversubscribed VM (load ~9 on 2 vCPUs)
  // GPT tiny's step was no faster with 200 us (the poll takes the core from
  // whoever else is runnable), and Note [Claimed items] already keeps a late
  // worker from holding a split GEMM up. The spin is bounded, so an idle
  // daemon's workers still sleep.
  void SpinForWork() {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(SpinUs());
    int polls = 0;
    while (queued_.load(std::memory_order_acquire) == 0) {
      if (++polls % 64 == 0 && std::chrono::steady_clock::now() >= until) {
        return;
      }
      CpuRelax();
    }
  }

  Mutex mu_;
  std::vector<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> queued_{0};  // queue_.size(), read without mu_
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

// Caching allocator benchmarks (figures in BENCHMARKS.md, "Allocator"):
//  - BM_CachedAllocFree: one Allocate+Free pair served from a warm cache
//    (the steady state of a training loop), small and large pools; the
//    target is < 100 ns per pair. BM_MallocFree is libc malloc for scale.
//  - BM_VariableBatch: a training-like loop whose batch size changes every
//    step; reports reserved/allocated at peak (1.0 = no memory wasted by
//    caching and fragmentation) and the device allocations it needed.
//
//   bazel run //tools/bench:alloc_bench
#include <cstdlib>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "runtime/memory/caching_allocator.h"

namespace tensord {
namespace {

// Debian's Abseil is built without NDEBUG, so absl::Mutex runs its deadlock
// detector (a graph update per Lock) unless the process turns it off, as the
// daemon does; the second argument selects it (1 = Debian default, on).
void SetDeadlockDetection(bool on) {
  absl::SetMutexDeadlockDetectionMode(on ? absl::OnDeadlockCycle::kAbort
                                         : absl::OnDeadlockCycle::kIgnore);
}

void BM_CachedAllocFree(benchmark::State& state) {
  SetDeadlockDetection(state.range(1) != 0);
  std::unique_ptr<CachingAllocator> alloc = MakeHostCachingAllocator("cpu");
  const auto bytes = static_cast<size_t>(state.range(0));
  const AllocContext ctx{1, nullptr};
  alloc->Free(*alloc->Allocate(bytes, ctx));  // warm the cache
  for (auto _ : state) {
    void* p = *alloc->Allocate(bytes, ctx);
    benchmark::DoNotOptimize(p);
    alloc->Free(p);
  }
  state.SetLabel(absl::StrCat(bytes <= (1 << 20) ? "small" : "large",
                              " pool, deadlock detection ",
                              state.range(1) != 0 ? "on" : "off"));
  SetDeadlockDetection(true);
}
BENCHMARK(BM_CachedAllocFree)
    ->ArgsProduct({{512, 64 << 10, 1 << 20, 4 << 20, 64 << 20}, {0, 1}});

// Two threads hammering one allocator (its single mutex).
void BM_CachedAllocFreeContended(benchmark::State& state) {
  static CachingAllocator* alloc = nullptr;
  if (state.thread_index() == 0) {
    SetDeadlockDetection(false);
    alloc = MakeHostCachingAllocator().release();
  }
  // Google Benchmark starts all threads' loops together after setup.
  for (auto _ : state) {
    void* p = *alloc->Allocate(
        4096,
        AllocContext{static_cast<uint64_t>(state.thread_index() + 1), nullptr});
    benchmark::DoNotOptimize(p);
    alloc->Free(p);
  }
  if (state.thread_index() == 0) {
    delete alloc;
    alloc = nullptr;
  }
}
BENCHMARK(BM_CachedAllocFreeContended)->Threads(2)->UseRealTime();

void BM_MallocFree(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = std::malloc(bytes);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}
BENCHMARK(BM_MallocFree)->Arg(512)->Arg(64 << 10)->Arg(4 << 20);

// A small MLP-like step: per layer, an activation of batch x width floats
// and a few temporaries; activations are freed in reverse after "backward".
// Parameters (fixed sizes) stay allocated throughout.
void BM_VariableBatch(benchmark::State& state) {
  std::unique_ptr<CachingAllocator> alloc = MakeHostCachingAllocator("cpu");
  const AllocContext ctx{1, nullptr};
  // range(0) scales the widths: 1 = a small MLP, 4 = ~16x the bytes.
  const size_t scale = static_cast<size_t>(state.range(0));
  std::vector<size_t> widths = {784, 1024, 1024, 512, 256, 10};
  for (size_t& w : widths) w *= scale;
  std::vector<void*> params;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    params.push_back(*alloc->Allocate(widths[i] * widths[i + 1] * 4, ctx));
  }
  std::mt19937 rng(0);
  std::uniform_int_distribution<int> batch_dist(1, 256);
  int64_t steps = 0;
  for (auto _ : state) {
    const size_t batch = static_cast<size_t>(batch_dist(rng));
    std::vector<void*> acts;
    for (size_t w : widths) {
      acts.push_back(*alloc->Allocate(batch * w * 4, ctx));
      void* tmp = *alloc->Allocate(batch * w * 4 + 100, ctx);  // e.g. relu
      acts.push_back(tmp);
    }
    for (size_t i = acts.size(); i-- > 0;) {
      void* grad = *alloc->Allocate(alloc->AllocationSize(acts[i]), ctx);
      alloc->Free(grad);
      alloc->Free(acts[i]);
    }
    ++steps;
  }
  const std::map<std::string, int64_t> st = alloc->Stats();
  const double reserved = static_cast<double>(st.at("reserved_bytes.all.peak"));
  const double allocated =
      static_cast<double>(st.at("allocated_bytes.all.peak"));
  const double requested =
      static_cast<double>(st.at("requested_bytes.all.peak"));
  state.counters["reserved_over_allocated_peak"] = reserved / allocated;
  state.counters["reserved_over_requested_peak"] = reserved / requested;
  state.counters["reserved_MiB"] = reserved / (1 << 20);
  state.counters["device_allocs"] =
      static_cast<double>(st.at("num_device_alloc"));
  state.counters["steps"] = static_cast<double>(steps);
  for (void* p : params) alloc->Free(p);
}
BENCHMARK(BM_VariableBatch)->Arg(1)->Arg(4);

}  // namespace
}  // namespace tensord

BENCHMARK_MAIN();

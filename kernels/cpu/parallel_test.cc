// ParallelFor covers [0, n) exactly once, in disjoint ranges, and what the
// workers write is visible to the caller when it returns. Runs with
// TENSORD_NUM_THREADS=4 (BUILD), and under --config=tsan too.
#include "kernels/cpu/parallel.h"

#include <algorithm>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/mutex.h"

namespace tensord {
namespace cpu {
namespace {

TEST(ParallelTest, PoolSizeFollowsTheEnvironment) {
  EXPECT_EQ(NumThreads(), 4);
}

TEST(ParallelTest, WorkersWritesAreVisibleWhenItReturns) {
  const int64_t n = 4 * kParallelGrain;
  std::vector<int> out(n, 0);  // plain: ParallelFor's return orders it
  ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] += static_cast<int>(i % 7);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], i % 7) << i;
}

TEST(ParallelTest, RangesAreDisjointAndCoverEverything) {
  const int64_t n = 1000;
  Mutex mu;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  ParallelFor(n, kParallelGrain, [&](int64_t begin, int64_t end) {
    MutexLock lock(&mu);
    ranges.emplace_back(begin, end);
  });
  MutexLock lock(&mu);
  EXPECT_GT(ranges.size(), 1u);
  std::sort(ranges.begin(), ranges.end());
  int64_t next = 0;
  for (const auto& [begin, end] : ranges) {
    EXPECT_EQ(begin, next);
    EXPECT_LE(begin, end);
    next = end;
  }
  EXPECT_EQ(next, n);
}

TEST(ParallelTest, SmallWorkRunsInlineOnTheCaller) {
  const std::thread::id caller = std::this_thread::get_id();
  int calls = 0;
  ParallelFor(100, 1, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 100);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST(ParallelTest, SlotsAreDistinctAndBelowTheThreadCount) {
  Mutex mu;
  std::vector<int> slots;
  ParallelForSlots(8, kParallelGrain, [&](int slot, int64_t, int64_t) {
    MutexLock lock(&mu);
    slots.push_back(slot);
  });
  MutexLock lock(&mu);
  ASSERT_EQ(slots.size(), 4u);  // one range per thread
  std::sort(slots.begin(), slots.end());
  EXPECT_EQ(slots, (std::vector<int>{0, 1, 2, 3}));
}

// A ParallelFor inside a body runs inline on that body's thread (the pool's
// threads are all busy with the outer call: scheduling would deadlock).
TEST(ParallelTest, NestedCallsRunInline) {
  EXPECT_FALSE(InParallelRegion());
  const int64_t n = 4 * kParallelGrain;
  std::vector<int> out(4 * n, 0);
  ParallelFor(4, kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t outer = begin; outer < end; ++outer) {
      EXPECT_TRUE(InParallelRegion());
      const std::thread::id body = std::this_thread::get_id();
      int calls = 0;
      ParallelFor(n, 1, [&](int64_t b, int64_t e) {
        EXPECT_EQ(std::this_thread::get_id(), body);
        ++calls;
        for (int64_t i = b; i < e; ++i) out[outer * n + i] += 1;
      });
      EXPECT_EQ(calls, 1);
    }
  });
  EXPECT_FALSE(InParallelRegion());
  for (int64_t i = 0; i < 4 * n; i += 101) ASSERT_EQ(out[i], 1) << i;
}

// Several session executors share the pool.
TEST(ParallelTest, ConcurrentCallersShareThePool) {
  constexpr int kCallers = 3;
  const int64_t n = 2 * kParallelGrain;
  std::vector<std::vector<int64_t>> outs(kCallers, std::vector<int64_t>(n));
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 5; ++round) {
        ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) outs[c][i] += i;
        });
      }
    });
  }
  for (auto& caller : callers) caller.join();
  for (int c = 0; c < kCallers; ++c) {
    for (int64_t i = 0; i < n; i += 997) ASSERT_EQ(outs[c][i], 5 * i);
  }
}

// Note [Claimed items]: every item runs exactly once, on the caller or a
// worker, and the workers' writes are visible when the call returns.
TEST(ParallelTest, ClaimedItemsRunOnceEach) {
  for (int64_t n : {1, 2, 3, 7, 64}) {
    std::vector<int> hits(n, 0);  // plain: each item is one thread's
    Mutex mu;
    std::vector<std::thread::id> threads;
    ParallelForClaimed(n, [&](int64_t i) {
      hits[i] += 1;
      MutexLock lock(&mu);
      threads.push_back(std::this_thread::get_id());
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << n << " " << i;
    MutexLock lock(&mu);
    EXPECT_EQ(threads.size(), static_cast<size_t>(n));
  }
}

// Calls whose items are done before a worker wakes: the late worker finds
// the call closed and leaves its items (and the caller's frame) alone.
TEST(ParallelTest, ClaimedCallsBackToBack) {
  int64_t total = 0;
  for (int call = 0; call < 2000; ++call) {
    int64_t local[2] = {0, 0};  // each call's own frame
    ParallelForClaimed(2, [&](int64_t i) { local[i] = call + i; });
    total += local[0] + local[1];
  }
  EXPECT_EQ(total, 2 * (1999 * 2000 / 2) + 2000);
}

TEST(ParallelTest, ClaimedItemsInsideABodyRunInline) {
  std::vector<int> out(4 * 8, 0);
  ParallelFor(4, kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t outer = begin; outer < end; ++outer) {
      const std::thread::id body = std::this_thread::get_id();
      ParallelForClaimed(8, [&](int64_t i) {
        EXPECT_EQ(std::this_thread::get_id(), body);
        out[outer * 8 + i] += 1;
      });
    }
  });
  for (int v : out) EXPECT_EQ(v, 1);
}

}  // namespace
}  // namespace cpu
}  // namespace tensord

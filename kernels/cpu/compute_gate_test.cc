#include "kernels/cpu/compute_gate.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

TEST(ComputeGateTest, WideScopesNeverOverlapAndReenter) {
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        WideKernelScope outer;
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        {
          WideKernelScope nested;  // same thread: must not wait on itself
          WideKernelScope narrow(false);
        }
        inside.fetch_sub(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
}

TEST(ComputeGateTest, WideParallelForsFromManyThreadsComplete) {
  // Each ParallelFor holds the gate while the pool's workers run its ranges;
  // a GEMM-sized scope inside a range (a worker, or the caller) must not
  // wait for the gate its own caller holds.
  std::vector<std::thread> threads;
  std::atomic<int64_t> total{0};
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        ParallelFor(1 << 20, 1, [&](int64_t begin, int64_t end) {
          WideKernelScope gemm;
          total.fetch_add(end - begin);
        });
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(total.load(), int64_t{3} * 50 * (1 << 20));
}

TEST(ComputeGateTest, NarrowScopeDoesNotWait) {
  WideKernelScope held;
  std::atomic<bool> ran{false};
  // Another thread's narrow scope passes while this one holds the gate.
  std::thread other([&] {
    WideKernelScope narrow(false);
    ran = true;
  });
  other.join();
  EXPECT_TRUE(ran.load());
}

}  // namespace
}  // namespace cpu
}  // namespace tensord

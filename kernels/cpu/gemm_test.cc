// Gemm (Note [GEMM threads]) and GemmBias against a triple loop in double
// precision, for every transpose pair, beta 0 and 1, shapes split by rows, by
// columns and by depth and ones too small to split, with 4 pool threads
// (BUILD), from the caller and from inside a ParallelFor body (where it must
// not split again).
#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

struct Shape3 {
  int64_t m, n, k;
};

// C = op(A) op(B) + beta C over stored row-major A, B with the given
// leading dimensions.
std::vector<double> Reference(bool ta, bool tb, Shape3 s,
                              const std::vector<float>& a, int64_t lda,
                              const std::vector<float>& b, int64_t ldb,
                              float beta, const std::vector<float>& c,
                              int64_t ldc) {
  std::vector<double> out(c.begin(), c.end());
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        acc += double{a[ta ? p * lda + i : i * lda + p]} *
               double{b[tb ? j * ldb + p : p * ldb + j]};
      }
      out[i * ldc + j] = acc + beta * double{c[i * ldc + j]};
    }
  }
  return out;
}

// GemmBias when with_bias: C's prior contents ignored, the bias added to
// every row (the reference: C set to the bias, beta 1).
void Check(bool ta, bool tb, Shape3 s, float beta, bool nested,
           bool with_bias = false) {
  SCOPED_TRACE(testing::Message()
               << "ta=" << ta << " tb=" << tb << " m=" << s.m << " n=" << s.n
               << " k=" << s.k << " beta=" << beta << " nested=" << nested
               << " bias=" << with_bias);
  std::mt19937 rng(s.m * 31 + s.n * 7 + s.k);
  std::uniform_real_distribution<float> u(-1, 1);
  // Leading dimensions wider than the rows, as for views into a bigger
  // matrix.
  const int64_t lda = (ta ? s.m : s.k) + 3, ldb = (tb ? s.k : s.n) + 5,
                ldc = s.n + 2;
  std::vector<float> a((ta ? s.k : s.m) * lda), b((tb ? s.n : s.k) * ldb),
      c(s.m * ldc);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  for (auto& x : c) x = u(rng);
  std::vector<float> bias(s.n);
  for (auto& x : bias) x = u(rng);
  std::vector<float> start = c;  // the reference's C: the bias, or c
  if (with_bias) {
    for (int64_t i = 0; i < s.m; ++i) {
      std::copy(bias.begin(), bias.end(), start.begin() + i * ldc);
    }
  }
  const auto want =
      Reference(ta, tb, s, a, lda, b, ldb, with_bias ? 1.0f : beta, start, ldc);
  auto run = [&] {
    if (with_bias) {
      GemmBias<float>(ta, tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb,
                      bias.data(), c.data(), ldc);
    } else {
      Gemm<float>(ta, tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, beta,
                  c.data(), ldc);
    }
  };
  if (nested) {
    // Two ranges, so the body runs on the pool; the first one does the GEMM.
    bool in_region = false;
    ParallelFor(2, kParallelGrain, [&](int64_t begin, int64_t) {
      if (begin != 0) return;
      in_region = InParallelRegion();
      run();
    });
    ASSERT_TRUE(in_region);
  } else {
    run();
  }
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const double tol = j < s.n ? 1e-4 * s.k : 0;  // padding untouched
      ASSERT_NEAR(c[i * ldc + j], want[i * ldc + j], tol) << i << "," << j;
    }
  }
}

TEST(GemmTest, MatchesTripleLoopSplitOrNot) {
  ASSERT_EQ(NumThreads(), 4);
  const Shape3 shapes[] = {
      {300, 70, 40},   // split by rows (m >= n), last block short
      {24, 1000, 30},  // split by columns
      {5, 7, 3},       // too small to split
      {40, 33, 300},   // a block of 32 rows and one of 8
      {16, 27, 4100},  // few rows and columns, long k: split over k
      {40, 33, 2000},  // k offers more blocks than the rows
  };
  for (const Shape3& s : shapes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (float beta : {0.0f, 1.0f}) {
          Check(ta, tb, s, beta, /*nested=*/false);
        }
        Check(ta, tb, s, 0.0f, /*nested=*/false, /*with_bias=*/true);
      }
    }
    Check(false, true, s, 1.0f, /*nested=*/true);
    Check(false, true, s, 0.0f, /*nested=*/true, /*with_bias=*/true);
  }
}

// Several session executors at once: wide products (split over the pool,
// taking the compute gate in turn) and narrow ones (OpenBLAS on the caller)
// from 3 threads, each checked against the triple loop.
TEST(GemmTest, ConcurrentCallersGetTheirOwnProducts) {
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([c] {
      for (int round = 0; round < 3; ++round) {
        Check(c == 1, false, {300, 70, 40}, 1.0f, /*nested=*/false);
        Check(false, c == 2, {5, 7, 3}, 0.0f, /*nested=*/false);
      }
    });
  }
  for (auto& caller : callers) caller.join();
}

}  // namespace
}  // namespace cpu
}  // namespace tensord

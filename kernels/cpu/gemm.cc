#include "kernels/cpu/gemm.h"

#include <cblas-openblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <mutex>
#include <type_traits>
#include <vector>

#include "kernels/cpu/compute_gate.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

// Rows or columns per block below which a split is not worth OpenBLAS's
// packing of the shared operand once more.
constexpr int64_t kMinBlock = 16;
// Depth per block of a split over K (products with few rows and columns and
// a long K: conv2d's weight gradient).
constexpr int64_t kMinDepth = 256;
// Multiply-adds below which float32 GEMMs call OpenBLAS, not oneDNN (Note
// [oneDNN GEMM]).
constexpr int64_t kSmallSgemm = int64_t{1} << 19;
// Blocks of C per thread in a split GEMM (Note [GEMM threads]): more
// balance the threads when one starts late, fewer pack the shared operand
// fewer times (GPT tiny's products: 2 per thread cost no more CPU time than
// 1 on one core).
constexpr int64_t kBlocksPerThread = 2;

void SingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

template <typename T>
void Blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const CBLAS_TRANSPOSE fa = ta ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE fb = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    // Note [oneDNN GEMM]: oneDNN's sgemm, on one OpenMP thread (Note [oneDNN
    // threads]), where it takes the shape: 3-9% faster than OpenBLAS's per
    // core on an MLP's products (BENCHMARKS.md), ~10% from 128 x 128 x 64
    // up. Below kSmallSgemm multiply-adds OpenBLAS's is the faster: 10-78%
    // (1.2 against 1.6-2.2 us at 64 x 64 x 16, 4.6 against 5.3-6.9 us at
    // 64^3, every transpose flag; Debian's libopenblas0 0.3.21 and libdnnl2
    // 2.6.3, one core), which is what attention's batched products of
    // 64 x 64 x 16-64 are: one small GEMM per (batch, head).
    if (m > 0 && n > 0 && k > 0 && m * n * k >= kSmallSgemm) {
      omp_set_num_threads(1);
      if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b,
                     ldb, beta, c, ldc) == dnnl_success) {
        return;
      }
    }
    cblas_sgemm(CblasRowMajor, fa, fb, m, n, k, 1.0f, a, lda, b, ldb, beta, c,
                ldc);
  } else {
    cblas_dgemm(CblasRowMajor, fa, fb, m, n, k, 1.0, a, lda, b, ldb, beta, c,
                ldc);
  }
}

// C[r0, r1) x [c0, c1) = bias[c0, c1), down the rows (GemmBias).
template <typename T>
void FillBias(const T* bias, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
              T* c, int64_t ldc) {
  for (int64_t r = r0; r < r1; ++r) {
    std::copy(bias + c0, bias + c1, c + r * ldc + c0);
  }
}

// C's rows (or columns) split over the pool in kBlocksPerThread * parts
// blocks, claimed by whichever thread is free (Note [Claimed items] in
// parallel.h).
// With a bias, each block of C is set to it just before its product (beta
// 1), on the thread that computes the block.
template <typename T>
void SplitRowsOrColumns(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                        const T* a, int64_t lda, const T* b, int64_t ldb,
                        T beta, const T* bias, T* c, int64_t ldc,
                        int64_t parts) {
  const bool by_rows = m >= n;
  const int64_t len = by_rows ? m : n;
  const int64_t want = std::min(parts * kBlocksPerThread, len / kMinBlock);
  // Blocks aligned to kMinBlock (whole SIMD vectors of C's columns).
  const int64_t step = (len / want + kMinBlock - 1) / kMinBlock * kMinBlock;
  const int64_t blocks = (len + step - 1) / step;
  ParallelForClaimed(blocks, [&](int64_t i) {
    const int64_t lo = i * step, rows = std::min(len, lo + step) - lo;
    if (bias != nullptr) {
      if (by_rows) {
        FillBias(bias, lo, lo + rows, 0, n, c, ldc);
      } else {
        FillBias(bias, 0, m, lo, lo + rows, c, ldc);
      }
    }
    const T bt = bias != nullptr ? T{1} : beta;
    if (by_rows) {
      Blas(ta, tb, rows, n, k, a + (ta ? lo : lo * lda), lda, b, ldb, bt,
           c + lo * ldc, ldc);
    } else {
      Blas(ta, tb, m, rows, k, a, lda, b + (tb ? lo * ldb : lo), ldb, bt,
           c + lo, ldc);
    }
  });
}

// K split over the pool: block 0 accumulates into C (with beta), the others
// into m x n partial products added to C afterwards, in block order.
template <typename T>
void SplitDepth(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
                int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc,
                int64_t parts) {
  const int64_t step = (k + parts - 1) / parts;
  std::vector<T> partial((parts - 1) * m * n);
  ParallelFor(parts, kParallelGrain, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const int64_t lo = i * step, depth = std::min(k, lo + step) - lo;
      const T* ai = a + (ta ? lo * lda : lo);
      const T* bi = b + (tb ? lo : lo * ldb);
      if (i == 0) {
        Blas(ta, tb, m, n, depth, ai, lda, bi, ldb, beta, c, ldc);
      } else {
        Blas(ta, tb, m, n, depth, ai, lda, bi, ldb, T{0},
             partial.data() + (i - 1) * m * n, n);
      }
    }
  });
  for (int64_t p = 0; p + 1 < parts; ++p) {
    const T* src = partial.data() + p * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] += src[i * n + j];
    }
  }
}

// Gemm and GemmBias (bias: nullptr, or C starts as it, beta 1).
template <typename T>
void GemmImpl(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
              int64_t lda, const T* b, int64_t ldb, T beta, const T* bias, T* c,
              int64_t ldc) {
  SingleThreadedBlas();
  const int threads = NumThreads();
  const int64_t parts = std::min<int64_t>(threads, std::max(m, n) / kMinBlock);
  const int64_t depth_parts = std::min<int64_t>(threads, k / kMinDepth);
  const bool split_c = parts >= threads || (parts > 1 && depth_parts <= parts);
  if (!InParallelRegion() && m * n * k >= kWideGemmFlops && split_c) {
    SplitRowsOrColumns(ta, tb, m, n, k, a, lda, b, ldb, beta, bias, c, ldc,
                       parts);
    return;
  }
  if (bias != nullptr) {
    FillBias(bias, 0, m, 0, n, c, ldc);
    beta = 1;
  }
  if (!InParallelRegion() && m * n * k >= kWideGemmFlops && depth_parts > 1) {
    SplitDepth(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc, depth_parts);
  } else {
    Blas(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
  }
}

}  // namespace

template <typename T>
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  GemmImpl<T>(ta, tb, m, n, k, a, lda, b, ldb, beta, nullptr, c, ldc);
}

template <typename T>
void GemmBias(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
              int64_t lda, const T* b, int64_t ldb, const T* bias, T* c,
              int64_t ldc) {
  GemmImpl<T>(ta, tb, m, n, k, a, lda, b, ldb, T{1}, bias, c, ldc);
}

template void Gemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*,
                          int64_t, const float*, int64_t, float, float*,
                          int64_t);
template void Gemm<double>(bool, bool, int64_t, int64_t, int64_t, const double*,
                           int64_t, const double*, int64_t, double, double*,
                           int64_t);
template void GemmBias<float>(bool, bool, int64_t, int64_t, int64_t,
                              const float*, int64_t, const float*, int64_t,
                              const float*, float*, int64_t);
template void GemmBias<double>(bool, bool, int64_t, int64_t, int64_t,
                               const double*, int64_t, const double*, int64_t,
                               const double*, double*, int64_t);

}  // namespace cpu
}  // namespace tensord

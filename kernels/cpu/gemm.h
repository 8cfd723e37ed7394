// One GEMM entry point for the CPU kernels (matmul, conv2d and its
// gradients): C = op(A) op(B) + beta C, row-major, float or double, through
// OpenBLAS, or oneDNN for float32 products from 2^19 multiply-adds (Note
// [oneDNN GEMM] in gemm.cc).
//
// Note [GEMM threads]: OpenBLAS runs single-threaded in tensord; a wide GEMM
// is split over the intra-op pool instead, into one OpenBLAS call per block
// of C's rows (or columns, whichever dimension is longer; two blocks per
// thread, claimed by whichever thread is free: Note [Claimed items] in
// parallel.h, so a worker that wakes late does not hold the call up), or,
// for few rows and columns over a long K (conv2d's weight gradient), per
// block of K with the partial products added afterwards. OpenBLAS's own
// threads spin-yield for a while after every call (on 2 cores a third of
// the daemon's CPU in a CNN step went to sched_yield and its scheduling),
// each small call paid its thread hand-off, and a kernel that already runs
// on the pool (conv2d's forward, image by image) could not call a GEMM
// without both pools fighting for the cores. Inside a ParallelFor body a
// GEMM stays on the calling thread. Results do not depend on timing: a row
// or column split leaves each element of C one OpenBLAS dot product over the
// full K, and a K split adds its blocks in a fixed order (so a result can
// differ in the last bits between pool sizes, never between runs).
#ifndef TENSORD_KERNELS_CPU_GEMM_H_
#define TENSORD_KERNELS_CPU_GEMM_H_

#include <cstdint>

namespace tensord {
namespace cpu {

// op(A) is [m, k] (A stored [k, m] when ta), op(B) is [k, n] (B stored
// [n, k] when tb), C is [m, n]; lda/ldb/ldc are the stored row strides.
// Requires m, n, k > 0. T is float or double.
template <typename T>
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// C = op(A) op(B) + bias, the [n] bias added to every row (nn.Linear's
// forward: Note [Fused linear] in linalg_ops.cc). Each block of C a thread
// computes is set to the bias right before its product, so the bias costs
// no pass of its own over C (nor a wake-up of the pool's workers).
template <typename T>
void GemmBias(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
              int64_t lda, const T* b, int64_t ldb, const T* bias, T* c,
              int64_t ldc);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_GEMM_H_

// Block-wide reductions for the one-block-per-row kernels (norm.cu,
// loss.cu): every thread of a kBlockThreads block calls them with its
// partial value and gets the block's total. They synchronise the block, so
// every thread must reach each call (loops over rows keep blockIdx-uniform
// bounds). The combination order is fixed: results do not vary run to run.
#ifndef TENSORD_KERNELS_CUDA_BLOCK_REDUCE_CUH_
#define TENSORD_KERNELS_CUDA_BLOCK_REDUCE_CUH_

#include <cuda_runtime.h>

namespace tensord {
namespace cuda {

inline constexpr int kBlockThreads = 256;

// Rows per launch: a block per row up to this many blocks, then the blocks
// stride over the rest.
inline int RowBlocks(int64_t rows) {
  constexpr int64_t kMaxBlocks = 65535 * 8;
  return static_cast<int>(rows < 1 ? 1 : rows < kMaxBlocks ? rows : kMaxBlocks);
}

// The larger of a and v, NaN winning (kernels/cpu/vec_math.h RowMax's pick).
template <typename T>
__device__ __forceinline__ T PickMax(T a, T v) {
  return (v > a || v != v) ? v : a;
}

template <typename T, bool kMax>
__device__ T BlockReduce(T v) {
  __shared__ T shared[kBlockThreads / 32];
  for (int o = 16; o > 0; o >>= 1) {
    const T other = __shfl_xor_sync(~0u, v, o);
    v = kMax ? PickMax(v, other) : v + other;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T r = shared[0];
  for (int w = 1; w < kBlockThreads / 32; ++w) {
    r = kMax ? PickMax(r, shared[w]) : r + shared[w];
  }
  __syncthreads();  // `shared` is free for the next call
  return r;
}

template <typename T>
__device__ T BlockSum(T v) {
  return BlockReduce<T, false>(v);
}

template <typename T>
__device__ T BlockMax(T v) {
  return BlockReduce<T, true>(v);
}

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_BLOCK_REDUCE_CUH_

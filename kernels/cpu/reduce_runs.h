// Serial helpers shared by the reductions (reduce.cc, reduce_stats.cc):
// merging reduced dims into longer runs, and the float32 run sum of Note
// [Float sums]. Internal to kernels/cpu.
#ifndef TENSORD_KERNELS_CPU_REDUCE_RUNS_H_
#define TENSORD_KERNELS_CPU_REDUCE_RUNS_H_

#include <algorithm>
#include <cstdint>

namespace tensord {
namespace cpu {
namespace internal {

// Rewrites the reduced dims (`sizes`/`strides`, outermost first) as fewer,
// longer ones visiting the same elements in the same row-major order: a dim
// whose stride is the next one's size times its stride merges with it
// (NCHW's H and W reduce as one run of H * W), size-1 dims go. At least one
// dim stays when there was one.
inline void MergeReducedDims(int64_t* sizes, int64_t* strides, int* ndim) {
  int m = 0;
  for (int d = 0; d < *ndim; ++d) {
    if (sizes[d] == 1) continue;
    if (m > 0 && strides[m - 1] == sizes[d] * strides[d]) {
      sizes[m - 1] *= sizes[d];
      strides[m - 1] = strides[d];
    } else {
      sizes[m] = sizes[d];
      strides[m] = strides[d];
      ++m;
    }
  }
  if (m == 0 && *ndim > 0) {
    sizes[0] = 1;
    strides[0] = 1;
    m = 1;
  }
  *ndim = m;
}

// Note [Float sums]: a float32 run (float32 in and out; half computes as
// float32) is summed in 16 float lanes, 16 steps at a time (256 elements);
// 16 such blocks are added lane-wise, the 16 lanes folded pairwise, and that
// total (of at most 4096 elements) is added to a double. An element thus
// goes through at most 16 + 16 + 4 float additions: the error bound, about
// 36 ulp of the sum of |x|, does not grow with the run's length (PyTorch's
// cascade sum is built the same way). It runs at twice the speed of
// converting each element to double (SSE2: 4 float lanes per instruction, 2
// double). Runs shorter than 64 take double lanes (the folds would dominate).
inline double FloatRunSum(const float* p, int64_t n) {
  constexpr int kLanes = 16;
  constexpr int64_t kSteps = 16, kBlocks = 16;
  double acc = 0;
  int64_t i = 0;
  if (n >= 4 * kLanes) {
    while (n - i >= kLanes) {
      float outer[kLanes] = {};
      for (int64_t b = 0; b < kBlocks && n - i >= kLanes; ++b) {
        const int64_t end =
            i + std::min(kSteps * kLanes, (n - i) / kLanes * kLanes);
        float lanes[kLanes] = {};
        for (; i < end; i += kLanes) {
          for (int j = 0; j < kLanes; ++j) lanes[j] += p[i + j];
        }
        for (int j = 0; j < kLanes; ++j) outer[j] += lanes[j];
      }
      for (int w = kLanes / 2; w > 0; w /= 2) {
        for (int j = 0; j < w; ++j) outer[j] += outer[j + w];
      }
      acc += outer[0];
    }
  }
  constexpr int kDoubleLanes = 8;
  double lanes[kDoubleLanes] = {};
  for (; i + kDoubleLanes <= n; i += kDoubleLanes) {
    for (int j = 0; j < kDoubleLanes; ++j) lanes[j] += p[i + j];
  }
  for (; i < n; ++i) acc += p[i];
  for (int j = 0; j < kDoubleLanes; ++j) acc += lanes[j];
  return acc;
}

}  // namespace internal
}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_REDUCE_RUNS_H_

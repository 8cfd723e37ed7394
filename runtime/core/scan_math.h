// The per-element steps of the one-dim rows that PyTorch defines by its own
// loops (aten/src/ATen/native/ReduceOps.cpp, Sorting.cpp, Bucketization):
// cummax/cummin's update, logcumsumexp's log-add-exp, mode's run scan over
// a sorted row, and searchsorted's binary searches. One definition for the
// CPU kernels (kernels/cpu/sort.cc) and the CUDA ones (kernels/cuda/scan.cu:
// TD_HOST_DEVICE), so both devices follow PyTorch's NaN, tie and infinity
// rules the same way.
#ifndef TENSORD_RUNTIME_CORE_SCAN_MATH_H_
#define TENSORD_RUNTIME_CORE_SCAN_MATH_H_

#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define TD_HOST_DEVICE __host__ __device__
#else
#define TD_HOST_DEVICE
#endif

namespace tensord {
namespace scan {

template <typename T>
TD_HOST_DEVICE inline bool IsNan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}

// cummax (kMax) / cummin: whether x replaces the running extreme `best`.
// As PyTorch's cummax_cummin_helper: ties move to the later index (>=, <=);
// a NaN takes over and stays, and each later NaN moves the index to itself.
template <bool kMax, typename T>
TD_HOST_DEVICE inline bool TakesOver(T x, T best) {
  if (IsNan(x)) return true;
  if (IsNan(best)) return false;
  return kMax ? x >= best : x <= best;
}

// log(exp(x) + exp(acc)), PyTorch's _log_add_exp_helper: NaN propagates;
// two equal infinities (-inf + -inf: nothing summed yet) stay themselves
// rather than giving inf - inf = NaN.
template <typename C>
TD_HOST_DEVICE inline C LogAddExp(C x, C acc) {
  const C lo = IsNan(acc) ? acc : (x < acc ? x : acc);
  const C hi = IsNan(acc) ? acc : (x < acc ? acc : x);
  if (IsNan(x)) return x;
  if (lo != hi || std::isfinite(lo)) return std::log1p(std::exp(lo - hi)) + hi;
  return x;
}

// Mode of one row sorted ascending by value: `at(k)` is its k-th value,
// `pos(k)` the input position it came from. PyTorch's CPU rule: the
// longest run of equal values wins, the first (smallest value) among equally
// long runs; its index is the position of the run's last element (after a
// stable sort: the value's last occurrence; Note [Mode ties] in
// kernels/cpu/sort.cc). NaN equals no value, so each NaN is a run of one.
// `size` >= 1.
template <typename T, typename At, typename Pos>
TD_HOST_DEVICE inline void ModeOfSortedRow(int64_t size, At at, Pos pos,
                                           T* value, int64_t* index) {
  int64_t best = 0, best_k = 0, run = 0;
  for (int64_t k = 0; k < size; ++k) {
    ++run;
    if (k == size - 1 || !(at(k) == at(k + 1))) {
      if (run > best) {
        best = run;
        best_k = k;
      }
      run = 0;
    }
  }
  *value = at(best_k);
  *index = pos(best_k);
}

// searchsorted's search of `val` in the row `at(0..n)`: the first k with
// at(k) >= val (left) or at(k) > val (right), with PyTorch's comparisons
// and midpoints (cus_lower_bound/cus_upper_bound), so NaN values and NaN
// boundaries land where PyTorch puts them.
template <typename T, typename At>
TD_HOST_DEVICE inline int64_t SearchRow(int64_t n, At at, T val, bool right) {
  int64_t start = 0, end = n;
  while (start < end) {
    const int64_t mid = start + ((end - start) >> 1);
    const T mid_val = at(mid);
    const bool go_right = right ? !(mid_val > val) : !(mid_val >= val);
    if (go_right) {
      start = mid + 1;
    } else {
      end = mid;
    }
  }
  return start;
}

}  // namespace scan
}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_SCAN_MATH_H_

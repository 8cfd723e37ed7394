// The p-norm distance of torch.cdist and torch.nn.functional.pdist, and its
// gradient, as scalar code for the CPU kernels (kernels/cpu/distance.cc) and
// the CUDA ones (kernels/cuda/distance.cu: TD_HOST_DEVICE): one definition,
// so both devices give the same values.
//
// Note [Distance norms]: as ATen's Distance kernels, the distance of two rows
// a, b with differences d_k = a_k - b_k is, for
//   p = 0:    the number of k with d_k != 0 (NaN if a difference is NaN);
//   p = 1:    sum |d_k|;          p = 2: sqrt(sum d_k^2);
//   p = inf:  max |d_k|: NaN propagates in pdist, while cdist skips NaN
//             differences (its CPU kernel's std::max; both PyTorch 1.13's
//             and 2.x's CPU results, kept: kNanInMax);
//   other p:  (sum |d_k|^p)^(1/p).
// Its gradient with respect to a_k, for an upstream gradient g and the
// distance `dist` the forward returned, is
//   p = 0:    0;                  p = 1: g sign(d_k);
//   0 < p < 2 (not 1): 0 where dist = 0, and where d_k = 0 with p < 1,
//             else g sign(d_k) |d_k|^(p-1) / dist^(p-1);
//   p = 2:    0 where dist = 0, else g d_k / dist;
//   p = inf:  g sign(d_k) where |d_k| == dist (every k that attains the
//             max), else 0;
//   p > 2:    0 where dist = 0, else g d_k |d_k|^(p-2) / dist^(p-1).
// Every gradient is odd in d_k (computed through sign(d) or d, so exactly),
// which lets pdist's backward take each pair from either end.
// The kernels take each difference in the element type (as PyTorch: the
// max norm's gradient compares |d_k| with the distance rounded to it), sum
// in double and round the result once.
#ifndef TENSORD_RUNTIME_CORE_DISTANCE_MATH_H_
#define TENSORD_RUNTIME_CORE_DISTANCE_MATH_H_

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "runtime/core/special_math.h"  // TD_HOST_DEVICE

namespace tensord {

enum class DistanceNorm { kZero, kOne, kTwo, kInf, kBelowTwo, kGeneral };

// Which formula of Note [Distance norms] serves `p` (p >= 0, checked by
// the callers).
inline DistanceNorm DistanceNormFor(double p) {
  if (p == 0) return DistanceNorm::kZero;
  if (p == 1) return DistanceNorm::kOne;
  if (p == 2) return DistanceNorm::kTwo;
  if (std::isinf(p)) return DistanceNorm::kInf;
  return p < 2 ? DistanceNorm::kBelowTwo : DistanceNorm::kGeneral;
}

// acc combined with the term of one difference d (kNanInMax: whether the
// max norm propagates a NaN difference).
template <DistanceNorm K, bool kNanInMax = true>
TD_HOST_DEVICE inline double DistanceAdd(double acc, double d, double p) {
  if constexpr (K == DistanceNorm::kZero) {
    return acc + (d != d ? d : (d != 0 ? 1.0 : 0.0));
  } else if constexpr (K == DistanceNorm::kOne) {
    return acc + fabs(d);
  } else if constexpr (K == DistanceNorm::kTwo) {
    return acc + d * d;
  } else if constexpr (K == DistanceNorm::kInf) {
    const double a = fabs(d);
    if constexpr (kNanInMax) {
      return (a > acc || a != a) ? a : acc;  // a NaN acc stays NaN
    } else {
      return a > acc ? a : acc;
    }
  } else {
    return acc + pow(fabs(d), p);
  }
}

template <DistanceNorm K>
TD_HOST_DEVICE inline double DistanceFinish(double acc, double p) {
  if constexpr (K == DistanceNorm::kTwo) {
    return sqrt(acc);
  } else if constexpr (K == DistanceNorm::kBelowTwo ||
                       K == DistanceNorm::kGeneral) {
    return pow(acc, 1.0 / p);
  } else {
    return acc;
  }
}

TD_HOST_DEVICE inline double DistanceSign(double d) {
  return d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0);
}

// d(dist)/d(a_k) times g for the difference d = a_k - b_k.
template <DistanceNorm K>
TD_HOST_DEVICE inline double DistanceGrad(double d, double g, double dist,
                                          double p) {
  if constexpr (K == DistanceNorm::kZero) {
    return 0;
  } else if constexpr (K == DistanceNorm::kOne) {
    return g * DistanceSign(d);
  } else if constexpr (K == DistanceNorm::kTwo) {
    return dist == 0 ? 0.0 : g * d / dist;
  } else if constexpr (K == DistanceNorm::kInf) {
    return fabs(d) == dist ? g * DistanceSign(d) : 0.0;
  } else if constexpr (K == DistanceNorm::kBelowTwo) {
    if (dist == 0 || (d == 0 && p < 1)) return 0;
    return DistanceSign(d) * pow(fabs(d), p - 1) * g / pow(dist, p - 1);
  } else {
    if (dist == 0) return 0;
    return d * pow(fabs(d), p - 2) * g / pow(dist, p - 1);
  }
}

// Runs fn(std::integral_constant<DistanceNorm, K>{}) for p's formula.
template <typename Fn>
void WithDistanceNorm(double p, Fn&& fn) {
  switch (DistanceNormFor(p)) {
    case DistanceNorm::kZero:
      fn(std::integral_constant<DistanceNorm, DistanceNorm::kZero>{});
      break;
    case DistanceNorm::kOne:
      fn(std::integral_constant<DistanceNorm, DistanceNorm::kOne>{});
      break;
    case DistanceNorm::kTwo:
      fn(std::integral_constant<DistanceNorm, DistanceNorm::kTwo>{});
      break;
    case DistanceNorm::kInf:
      fn(std::integral_constant<DistanceNorm, DistanceNorm::kInf>{});
      break;
    case DistanceNorm::kBelowTwo:
      fn(std::integral_constant<DistanceNorm, DistanceNorm::kBelowTwo>{});
      break;
    case DistanceNorm::kGeneral:
      fn(std::integral_constant<DistanceNorm, DistanceNorm::kGeneral>{});
      break;
  }
}

// pdist's pair (i, j), i < j < n, at position k of its row-major upper
// triangle: k = i (2n - i - 1) / 2 + (j - i - 1).
TD_HOST_DEVICE inline int64_t PairStart(int64_t i, int64_t n) {
  return i * (2 * n - i - 1) / 2;
}

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_DISTANCE_MATH_H_

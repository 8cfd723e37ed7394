// Math written so that loops over it vectorise at -O2/-O3 without fast-math
// (std::exp and std::erf are library calls per element), and row reductions
// with independent lanes (no reassociation flags). Shared by softmax, the
// fused cross entropy and GELU. Float32 only where an approximation is used:
// float64 kernels call the C library.
#ifndef TENSORD_KERNELS_CPU_VEC_MATH_H_
#define TENSORD_KERNELS_CPU_VEC_MATH_H_

#include <cstdint>
#include <cstring>
#include <limits>

namespace tensord {
namespace cpu {
namespace internal {

// exp for float (Cephes' expf polynomial, ~1 ulp). Below -87.34 (where expf
// turns denormal) it is 0: -inf gives 0, as softmax's masked entries need
// (the clamp alone gave FLT_MIN there, so a row of -inf was uniform).
inline float VecExp(float x) {
  const bool underflow = x < -87.3365447505531f;
  x = x > 88.3762626647949f ? 88.3762626647949f : x;
  x = x < -87.3365447505531f ? -87.3365447505531f : x;
  const float magic = 12582912.0f;  // 1.5 * 2^23: round to nearest
  const float t = x * 1.44269504088896341f + magic;
  float n = t - magic;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  // 2^n from t's mantissa (t = magic + n exactly) in unsigned arithmetic:
  // no float-to-int conversion, so a NaN input (which the clamps above let
  // through) is defined behaviour and still gives NaN.
  uint32_t t_bits;
  std::memcpy(&t_bits, &t, 4);
  const uint32_t bits = (t_bits - 0x4B400000u + 127u) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return underflow ? 0.0f : y * scale;
}

// erf for float: a rational minimax approximation on [-4, 4] (erf(4) is 1 in
// float), absolute error below 5e-7 (Eigen's generic_fast_erf_float).
inline float VecErf(float a) {
  const float x = a < -4.f ? -4.f : (a > 4.f ? 4.f : a);
  const float x2 = x * x;
  float p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = x2 * p + -2.10102402082508e-06f;
  p = x2 * p + -5.69250639462346e-05f;
  p = x2 * p + -7.34990630326855e-04f;
  p = x2 * p + -2.95459980854025e-03f;
  p = x2 * p + -1.60960333262415e-02f;
  p = x * p;
  float q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
  q = x2 * q + -1.68282697438203e-03f;
  q = x2 * q + -7.37332916720468e-03f;
  q = x2 * q + -1.42647390514189e-02f;
  return a != a ? a : p / q;  // NaN stays NaN
}

// Max of a row; NaN wins (x != x), as PyTorch's max propagates it.
template <typename T>
T RowMax(const T* x, int64_t n) {
  constexpr int kLanes = 8;
  T lanes[kLanes];
  for (int j = 0; j < kLanes; ++j)
    lanes[j] = -std::numeric_limits<T>::infinity();
  int64_t i = 0;
  auto pick = [](T a, T v) { return (v > a || v != v) ? v : a; };
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lanes[j] = pick(lanes[j], x[i + j]);
  }
  T m = -std::numeric_limits<T>::infinity();
  for (; i < n; ++i) m = pick(m, x[i]);
  for (int j = 0; j < kLanes; ++j) m = pick(m, lanes[j]);
  return m;
}

template <typename T>
double RowSum(const T* x, int64_t n) {
  constexpr int kLanes = 8;
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lanes[j] += x[i + j];
  }
  double s = 0;
  for (; i < n; ++i) s += x[i];
  for (int j = 0; j < kLanes; ++j) s += lanes[j];
  return s;
}

}  // namespace internal
}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_VEC_MATH_H_

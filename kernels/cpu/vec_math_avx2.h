// vec_math.h's float exp with AVX2 + FMA intrinsics (8 lanes), for kernels
// built without -mavx2 (all of them: the daemon runs on any x86-64). A
// function marked TENSORD_AVX2 is compiled for AVX2 + FMA whatever the TU's
// flags and must only be called where CpuHasAvx2Fma() (Note [CPU softmax] in
// softmax.h has the numbers that made it worth it).
#ifndef TENSORD_KERNELS_CPU_VEC_MATH_AVX2_H_
#define TENSORD_KERNELS_CPU_VEC_MATH_AVX2_H_

#include <immintrin.h>

#include <cstdint>
#include <limits>

#include "kernels/cpu/vec_math.h"

#define TENSORD_AVX2 __attribute__((target("avx2,fma")))

namespace tensord {
namespace cpu {
namespace internal {

inline bool CpuHasAvx2Fma() {
  static const bool has =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

// vec_math.h's VecExp, 8 lanes: the same clamps, polynomial and 2^n. The
// clamps keep x as the second operand of min/max, which returns it when it
// is NaN (so NaN stays NaN, as in VecExp).
TENSORD_AVX2 inline __m256 Exp8(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.3365447505531f);
  const __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_set1_ps(88.3762626647949f), x);
  x = _mm256_max_ps(lo, x);
  const __m256 magic = _mm256_set1_ps(12582912.0f);
  const __m256 t =
      _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), magic);
  const __m256 n = _mm256_sub_ps(t, magic);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_add_ps(_mm256_fmadd_ps(y, _mm256_mul_ps(r, r), r),
                    _mm256_set1_ps(1.0f));
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(t),
                                         _mm256_set1_epi32(127 - 0x4B400000)),
                        23);
  return _mm256_andnot_ps(underflow,
                          _mm256_mul_ps(y, _mm256_castsi256_ps(bits)));
}

TENSORD_AVX2 inline float HorizontalMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

TENSORD_AVX2 inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Max of x[0, n); NaN if any is NaN (RowMax's rule: NaN wins).
TENSORD_AVX2 inline float RowMaxAvx2(const float* x, int64_t n) {
  __m256 vmax = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    vmax = _mm256_max_ps(vmax, v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  float m = HorizontalMax(vmax);
  if (_mm256_movemask_ps(nan) != 0) m = std::numeric_limits<float>::quiet_NaN();
  for (; i < n; ++i) m = (x[i] > m || x[i] != x[i]) ? x[i] : m;
  return m;
}

// x[i] = exp(x[i] - m) for i < n; returns their sum. -inf entries give 0.
TENSORD_AVX2 inline float ExpShiftedSum(float* x, int64_t n, float m) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256 vsum = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    _mm256_storeu_ps(x + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  float sum = HorizontalSum(vsum);
  for (; i < n; ++i) sum += (x[i] = VecExp(x[i] - m));
  return sum;
}

}  // namespace internal
}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_VEC_MATH_AVX2_H_

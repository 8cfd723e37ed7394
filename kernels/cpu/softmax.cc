#include "kernels/cpu/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/cpu/vec_math_avx2.h"

namespace tensord {
namespace cpu {
namespace {

using internal::CpuHasAvx2Fma;
using internal::Exp8;
using internal::HorizontalSum;
using internal::RowMaxAvx2;
using internal::VecExp;

// --- float32 rows along the last dim, AVX2 + FMA ---------------------------

// One row of n: max, exp(x - max) and its sum, then scaled (or x - lse).
TENSORD_AVX2 void SoftmaxRowAvx2(const float* x, float* y, int64_t n,
                                 bool log) {
  float m = RowMaxAvx2(x, n);
  if (std::isinf(m) && m < 0) m = 0;  // an all -inf row: NaN as PyTorch
  const __m256 vm = _mm256_set1_ps(m);
  __m256 vsum = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    if (!log) _mm256_storeu_ps(y + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  float sum = HorizontalSum(vsum);
  for (; i < n; ++i) {
    const float e = VecExp(x[i] - m);
    if (!log) y[i] = e;
    sum += e;
  }
  if (log) {
    const float lse = m + std::log(sum);
    const __m256 vl = _mm256_set1_ps(lse);
    for (i = 0; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(y + i, _mm256_sub_ps(_mm256_loadu_ps(x + i), vl));
    }
    for (; i < n; ++i) y[i] = x[i] - lse;
  } else {
    const float inv = 1.0f / sum;
    const __m256 vi = _mm256_set1_ps(inv);
    for (i = 0; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vi));
    }
    for (; i < n; ++i) y[i] *= inv;
  }
}

// softmax: dx = y (dy - sum(dy y)); log: dx = dy - exp(y) sum(dy).
TENSORD_AVX2 void SoftmaxBackwardRowAvx2(const float* dy, const float* y,
                                         float* dx, int64_t n, bool log) {
  __m256 vacc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(dy + i);
    vacc = log ? _mm256_add_ps(vacc, g)
               : _mm256_fmadd_ps(g, _mm256_loadu_ps(y + i), vacc);
  }
  float s = HorizontalSum(vacc);
  for (; i < n; ++i) s += log ? dy[i] : dy[i] * y[i];
  const __m256 vs = _mm256_set1_ps(s);
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(dy + i), out = _mm256_loadu_ps(y + i);
    _mm256_storeu_ps(dx + i, log ? _mm256_fnmadd_ps(Exp8(out), vs, g)
                                 : _mm256_mul_ps(out, _mm256_sub_ps(g, vs)));
  }
  for (; i < n; ++i)
    dx[i] = log ? dy[i] - VecExp(y[i]) * s : y[i] * (dy[i] - s);
}

// Eight columns of a [dim, inner] slab side by side (softmax along dim),
// one vector per d; sums in double.
TENSORD_AVX2 void SoftmaxColumns8Avx2(const float* x, float* y, int64_t dim,
                                      int64_t inner, bool log) {
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 m = ninf, nan = _mm256_setzero_ps();
  for (int64_t d = 0; d < dim; ++d) {
    const __m256 v = _mm256_loadu_ps(x + d * inner);
    m = _mm256_max_ps(m, v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  m = _mm256_or_ps(m, nan);  // NaN wins (all bits set is a NaN)
  // An all -inf column: 0, so that its exps are 0 and it turns NaN.
  m = _mm256_andnot_ps(_mm256_cmp_ps(m, ninf, _CMP_EQ_OQ), m);
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (int64_t d = 0; d < dim; ++d) {
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + d * inner), m));
    if (!log) _mm256_storeu_ps(y + d * inner, e);
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  __m256 vk;  // log: the log-sum-exp; else 1 / sum
  if (log) {  // (no vector log: eight calls per block of columns)
    alignas(32) double sum[8];
    alignas(32) float mf[8], k[8];
    _mm256_store_pd(sum, lo);
    _mm256_store_pd(sum + 4, hi);
    _mm256_store_ps(mf, m);
    for (int j = 0; j < 8; ++j) {
      k[j] = mf[j] + static_cast<float>(std::log(sum[j]));
    }
    vk = _mm256_load_ps(k);
  } else {
    const __m256d one = _mm256_set1_pd(1.0);
    vk = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_div_pd(one, hi)),
                         _mm256_cvtpd_ps(_mm256_div_pd(one, lo)));
  }
  for (int64_t d = 0; d < dim; ++d) {
    float* yd = y + d * inner;
    _mm256_storeu_ps(yd, log ? _mm256_sub_ps(_mm256_loadu_ps(x + d * inner), vk)
                             : _mm256_mul_ps(_mm256_loadu_ps(yd), vk));
  }
}

// SoftmaxBackwardRowAvx2's formulas down eight columns; sums in double.
TENSORD_AVX2 void SoftmaxBackwardColumns8Avx2(const float* dy, const float* y,
                                              float* dx, int64_t dim,
                                              int64_t inner, bool log) {
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (int64_t d = 0; d < dim; ++d) {
    const __m256 g = _mm256_loadu_ps(dy + d * inner);
    const __m256 t = log ? g : _mm256_mul_ps(g, _mm256_loadu_ps(y + d * inner));
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(t)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(t, 1)));
  }
  const __m256 vs = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
  for (int64_t d = 0; d < dim; ++d) {
    const int64_t at = d * inner;
    const __m256 g = _mm256_loadu_ps(dy + at), out = _mm256_loadu_ps(y + at);
    _mm256_storeu_ps(dx + at, log ? _mm256_fnmadd_ps(Exp8(out), vs, g)
                                  : _mm256_mul_ps(out, _mm256_sub_ps(g, vs)));
  }
}

// --- portable loops: float64, and dims other than the last ------------------

template <typename T>
T Exp(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return VecExp(x);
  } else {
    return std::exp(x);
  }
}

// One row (the portable path of inner == 1): exp and its sum in one pass
// with 8 independent lanes.
template <typename T>
void SoftmaxRow(const T* x, T* y, int64_t n, bool log) {
  T m = internal::RowMax(x, n);
  if (std::isinf(m) && m < 0) m = 0;  // an all -inf row: NaN as PyTorch
  T lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) {
      const T e = Exp(x[i + j] - m);
      y[i + j] = e;
      lanes[j] += e;
    }
  }
  double sum = 0;
  for (; i < n; ++i) sum += (y[i] = Exp(x[i] - m));
  for (int j = 0; j < 8; ++j) sum += lanes[j];
  if (log) {
    const T lse = m + static_cast<T>(std::log(sum));
    for (i = 0; i < n; ++i) y[i] = x[i] - lse;
  } else {
    const T inv = static_cast<T>(1.0 / sum);
    for (i = 0; i < n; ++i) y[i] *= inv;
  }
}

template <typename T>
void SoftmaxBackwardRow(const T* dy, const T* y, T* dx, int64_t n, bool log) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += log ? dy[i] : dy[i] * y[i];
  const T s = static_cast<T>(acc);
  for (int64_t i = 0; i < n; ++i) {
    dx[i] = log ? dy[i] - Exp(y[i]) * s : y[i] * (dy[i] - s);
  }
}

// Columns [c, c + w) (w <= kCols) of one [dim, inner] slab (inner > 1),
// each a softmax along dim, side by side so the loops over them vectorise.
// Sums in double.
constexpr int64_t kCols = 8;

template <typename T>
void SoftmaxColumns(const T* x, T* y, int64_t dim, int64_t inner, int64_t w,
                    bool log) {
  T m[kCols];
  double s[kCols] = {};
  std::fill(m, m + kCols, -std::numeric_limits<T>::infinity());
  for (int64_t d = 0; d < dim; ++d) {
    const T* xd = x + d * inner;
    for (int64_t j = 0; j < w; ++j) {
      m[j] = (xd[j] > m[j] || xd[j] != xd[j]) ? xd[j] : m[j];
    }
  }
  for (int64_t j = 0; j < w; ++j) {
    if (std::isinf(m[j]) && m[j] < 0) m[j] = 0;  // all -inf: NaN
  }
  for (int64_t d = 0; d < dim; ++d) {
    const T* xd = x + d * inner;
    T* yd = y + d * inner;
    for (int64_t j = 0; j < w; ++j) {
      const T e = Exp(xd[j] - m[j]);
      if (!log) yd[j] = e;
      s[j] += e;
    }
  }
  T k[kCols];  // log: the log-sum-exp; else 1 / sum
  for (int64_t j = 0; j < w; ++j) {
    k[j] = log ? m[j] + static_cast<T>(std::log(s[j]))
               : static_cast<T>(1.0 / s[j]);
  }
  for (int64_t d = 0; d < dim; ++d) {
    const T* xd = x + d * inner;
    T* yd = y + d * inner;
    for (int64_t j = 0; j < w; ++j) yd[j] = log ? xd[j] - k[j] : yd[j] * k[j];
  }
}

template <typename T>
void SoftmaxBackwardColumns(const T* dy, const T* y, T* dx, int64_t dim,
                            int64_t inner, int64_t w, bool log) {
  double acc[kCols] = {};
  for (int64_t d = 0; d < dim; ++d) {
    for (int64_t j = 0; j < w; ++j) {
      const int64_t at = d * inner + j;
      acc[j] += log ? dy[at] : dy[at] * y[at];
    }
  }
  T s[kCols];
  for (int64_t j = 0; j < w; ++j) s[j] = static_cast<T>(acc[j]);
  for (int64_t d = 0; d < dim; ++d) {
    for (int64_t j = 0; j < w; ++j) {
      const int64_t at = d * inner + j;
      dx[at] = log ? dy[at] - Exp(y[at]) * s[j] : y[at] * (dy[at] - s[j]);
    }
  }
}

// Calls fn(offset, w) for every block of up to kCols columns of every slab
// (inner > 1), blocks split over the pool.
template <typename Fn>
void ForColumnBlocks(int64_t outer, int64_t dim, int64_t inner, Fn&& fn) {
  const int64_t per_slab = (inner + kCols - 1) / kCols;
  ParallelFor(outer * per_slab, dim * std::min(inner, kCols) * 8,
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                  const int64_t o = r / per_slab, c = r % per_slab * kCols;
                  fn(o * dim * inner + c, std::min(kCols, inner - c));
                }
              });
}

}  // namespace

absl::Status Softmax(const StridedView& in, int64_t outer, int64_t dim,
                     int64_t inner, bool log, const StridedView& out) {
  return DispatchFloat(in.dtype, "softmax", [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.ptr<const T>();
    T* y = out.ptr<T>();
    if (inner == 1) {
      ParallelFor(outer, dim * 8, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          if constexpr (std::is_same_v<T, float>) {
            if (CpuHasAvx2Fma()) {
              SoftmaxRowAvx2(x + o * dim, y + o * dim, dim, log);
              continue;
            }
          }
          SoftmaxRow(x + o * dim, y + o * dim, dim, log);
        }
      });
      return;
    }
    ForColumnBlocks(outer, dim, inner, [&](int64_t at, int64_t w) {
      if constexpr (std::is_same_v<T, float>) {
        if (w == kCols && CpuHasAvx2Fma()) {
          SoftmaxColumns8Avx2(x + at, y + at, dim, inner, log);
          return;
        }
      }
      SoftmaxColumns(x + at, y + at, dim, inner, w, log);
    });
  });
}

absl::Status SoftmaxBackward(const StridedView& dy, const StridedView& y,
                             int64_t outer, int64_t dim, int64_t inner,
                             bool log, const StridedView& dx) {
  return DispatchFloat(y.dtype, "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* g = dy.ptr<const T>();
    const T* out = y.ptr<const T>();
    T* d = dx.ptr<T>();
    if (inner == 1) {
      ParallelFor(outer, dim * 4, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const int64_t at = o * dim;
          if constexpr (std::is_same_v<T, float>) {
            if (CpuHasAvx2Fma()) {
              SoftmaxBackwardRowAvx2(g + at, out + at, d + at, dim, log);
              continue;
            }
          }
          SoftmaxBackwardRow(g + at, out + at, d + at, dim, log);
        }
      });
      return;
    }
    ForColumnBlocks(outer, dim, inner, [&](int64_t at, int64_t w) {
      if constexpr (std::is_same_v<T, float>) {
        if (w == kCols && CpuHasAvx2Fma()) {
          SoftmaxBackwardColumns8Avx2(g + at, out + at, d + at, dim, inner,
                                      log);
          return;
        }
      }
      SoftmaxBackwardColumns(g + at, out + at, d + at, dim, inner, w, log);
    });
  });
}

}  // namespace cpu
}  // namespace tensord

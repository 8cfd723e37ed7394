#include "kernels/cpu/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/cpu/vec_math_avx2.h"

namespace tensord {
namespace cpu {
namespace {

// The rows [first, last) (the portable forward; the backward's loops are
// also inlined into BackwardRowsAvx2, gelu.cc's pattern).
template <typename T>
__attribute__((always_inline)) inline void ForwardRows(
    const T* x, int64_t first, int64_t last, int64_t n, const T* w, const T* b,
    double eps, T* y, T* mean_out, T* rstd_out) {
  constexpr int kLanes = 8;  // independent lanes: the loops vectorise
  for (int64_t r = first; r < last; ++r) {
    const T* p = x + r * n;
    T* q = y + r * n;
    const T tm =
        static_cast<T>(internal::RowSum(p, n) / static_cast<double>(n));
    T lanes[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) {
        const T d = p[i + j] - tm;
        lanes[j] += d * d;
      }
    }
    double sq = 0;
    for (; i < n; ++i) sq += double(p[i] - tm) * double(p[i] - tm);
    for (int j = 0; j < kLanes; ++j) sq += lanes[j];
    const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
    const T ts = static_cast<T>(rstd);
    if (w != nullptr && b != nullptr) {
      for (int64_t k = 0; k < n; ++k) q[k] = (p[k] - tm) * ts * w[k] + b[k];
    } else if (w != nullptr) {
      for (int64_t k = 0; k < n; ++k) q[k] = (p[k] - tm) * ts * w[k];
    } else {
      for (int64_t k = 0; k < n; ++k) q[k] = (p[k] - tm) * ts;
    }
    mean_out[r] = tm;
    rstd_out[r] = ts;
  }
}

// Note [CPU layer_norm]: float32's rows take AVX2 + FMA code where the CPU
// has it (the TU is built without -mavx2, as for softmax and GELU): the
// forward's sums in four 8-lane chains (one chain of 8 lanes was bound by the
// add latency), the backward the portable rows compiled for AVX2. And a pass
// is split over the pool only from ~256K (forward) or ~128K (backward)
// elements: split in two, GPT tiny's [512, 128] rows paid the worker's
// wake-up for less work than it saved. On those rows (2-vCPU VM under load,
// one thread, least of 300): forward 39.9 -> 17.8 us, backward 91.8 -> 47.4
// us; PyTorch 2.15 on two threads: ~28 and ~55 us.
// A row's sum: four 8-lane chains, the tail and the total in double.
TENSORD_AVX2 inline double SumAvx2(const float* p, int64_t n) {
  __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                 _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int j = 0; j < 4; ++j) {
      s[j] = _mm256_add_ps(s[j], _mm256_loadu_ps(p + i + 8 * j));
    }
  }
  for (; i + 8 <= n; i += 8) {
    s[0] = _mm256_add_ps(s[0], _mm256_loadu_ps(p + i));
  }
  double sum = internal::HorizontalSum(
      _mm256_add_ps(_mm256_add_ps(s[0], s[1]), _mm256_add_ps(s[2], s[3])));
  for (; i < n; ++i) sum += p[i];
  return sum;
}

// Sum of (p - tm)^2 over a row, four 8-lane chains.
TENSORD_AVX2 inline double SquaresAvx2(const float* p, int64_t n, float tm) {
  const __m256 vm = _mm256_set1_ps(tm);
  __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                 _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int j = 0; j < 4; ++j) {
      const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(p + i + 8 * j), vm);
      s[j] = _mm256_fmadd_ps(d, d, s[j]);
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(p + i), vm);
    s[0] = _mm256_fmadd_ps(d, d, s[0]);
  }
  double sq = internal::HorizontalSum(
      _mm256_add_ps(_mm256_add_ps(s[0], s[1]), _mm256_add_ps(s[2], s[3])));
  for (; i < n; ++i) sq += double(p[i] - tm) * double(p[i] - tm);
  return sq;
}

TENSORD_AVX2 void ForwardRowsAvx2(const float* x, int64_t first, int64_t last,
                                  int64_t n, const float* w, const float* b,
                                  double eps, float* y, float* mean_out,
                                  float* rstd_out) {
  for (int64_t r = first; r < last; ++r) {
    const float* p = x + r * n;
    float* q = y + r * n;
    const float tm = static_cast<float>(SumAvx2(p, n) / static_cast<double>(n));
    const double sq = SquaresAvx2(p, n, tm);
    const float ts =
        static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(n) + eps));
    const __m256 vm = _mm256_set1_ps(tm), vs = _mm256_set1_ps(ts);
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
      __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(p + k), vm), vs);
      if (w != nullptr) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + k));
      if (b != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(b + k));
      _mm256_storeu_ps(q + k, v);
    }
    for (; k < n; ++k) {
      float v = (p[k] - tm) * ts;
      if (w != nullptr) v *= w[k];
      if (b != nullptr) v += b[k];
      q[k] = v;
    }
    mean_out[r] = tm;
    rstd_out[r] = ts;
  }
}

template <typename T>
void Forward(const T* x, int64_t m, int64_t n, const T* w, const T* b,
             double eps, T* y, T* mean_out, T* rstd_out) {
  ParallelFor(m, std::max<int64_t>(n / 4, 1), [&](int64_t first, int64_t last) {
    if constexpr (std::is_same_v<T, float>) {
      if (internal::CpuHasAvx2Fma()) {
        ForwardRowsAvx2(x, first, last, n, w, b, eps, y, mean_out, rstd_out);
        return;
      }
    }
    ForwardRows<T>(x, first, last, n, w, b, eps, y, mean_out, rstd_out);
  });
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * w and
// xhat = (x - mean) * rstd (PyTorch's formula); dw = sum over rows of
// dy * xhat, db = sum of dy, accumulated per pool slot in double and summed
// in slot order at the end.
template <typename T>
__attribute__((always_inline)) inline void BackwardRows(
    const T* dy, const T* x, int64_t first, int64_t last, int64_t n,
    const T* mean, const T* rstd, const T* w, T* dx, double* aw, double* ab) {
  for (int64_t r = first; r < last; ++r) {
    const T* g = dy + r * n;
    const T* p = x + r * n;
    const T tm = mean[r], ts = rstd[r];
    double a = 0, b = 0;  // sum(g * xhat), sum(g)
    {
      constexpr int kLanes = 32;
      T la[kLanes] = {}, lb[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) {
          const T gw = w != nullptr ? g[i + j] * w[i + j] : g[i + j];
          la[j] += gw * ((p[i + j] - tm) * ts);
          lb[j] += gw;
        }
      }
      for (; i < n; ++i) {
        const T gw = w != nullptr ? g[i] * w[i] : g[i];
        a += gw * ((p[i] - tm) * ts);
        b += gw;
      }
      for (int j = 0; j < kLanes; ++j) a += la[j], b += lb[j];
    }
    if (aw != nullptr) {
      for (int64_t k = 0; k < n; ++k) {
        aw[k] += double(g[k] * ((p[k] - tm) * ts));
        ab[k] += double(g[k]);
      }
    }
    if (dx == nullptr) continue;
    const T ka = static_cast<T>(a / static_cast<double>(n));
    const T kb = static_cast<T>(b / static_cast<double>(n));
    T* q = dx + r * n;
    if (w != nullptr) {
      for (int64_t k = 0; k < n; ++k) {
        q[k] = ts * (g[k] * w[k] - kb - (p[k] - tm) * ts * ka);
      }
    } else {
      for (int64_t k = 0; k < n; ++k) {
        q[k] = ts * (g[k] - kb - (p[k] - tm) * ts * ka);
      }
    }
  }
}

TENSORD_AVX2 void BackwardRowsAvx2(const float* dy, const float* x,
                                   int64_t first, int64_t last, int64_t n,
                                   const float* mean, const float* rstd,
                                   const float* w, float* dx, double* aw,
                                   double* ab) {
  BackwardRows<float>(dy, x, first, last, n, mean, rstd, w, dx, aw, ab);
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * w and
// xhat = (x - mean) * rstd (PyTorch's formula); dw = sum over rows of
// dy * xhat, db = sum of dy, accumulated per pool slot in double and summed
// in slot order at the end.
template <typename T>
void Backward(const T* dy, const T* x, int64_t m, int64_t n, const T* mean,
              const T* rstd, const T* w, T* dx, T* dw, T* db) {
  const bool params = dw != nullptr || db != nullptr;
  const int slots = NumThreads();
  std::vector<double> acc(params ? static_cast<size_t>(slots) * 2 * n : 0);
  ParallelForSlots(
      m, std::max<int64_t>(n / 2, 1),
      [&](int slot, int64_t first, int64_t last) {
        double* aw =
            params ? acc.data() + static_cast<size_t>(slot) * 2 * n : nullptr;
        double* ab = params ? aw + n : nullptr;
        if constexpr (std::is_same_v<T, float>) {
          if (internal::CpuHasAvx2Fma()) {
            BackwardRowsAvx2(dy, x, first, last, n, mean, rstd, w, dx, aw, ab);
            return;
          }
        }
        BackwardRows<T>(dy, x, first, last, n, mean, rstd, w, dx, aw, ab);
      });
  if (!params) return;
  for (int64_t k = 0; k < n; ++k) {
    double sw = 0, sb = 0;
    for (int s = 0; s < slots; ++s) {
      sw += acc[static_cast<size_t>(s) * 2 * n + k];
      sb += acc[static_cast<size_t>(s) * 2 * n + n + k];
    }
    if (dw != nullptr) dw[k] = static_cast<T>(sw);
    if (db != nullptr) db[k] = static_cast<T>(sb);
  }
}

template <typename T>
const T* Opt(const StridedView& v) {
  return v.data == nullptr ? nullptr : v.ptr<const T>();
}

template <typename T>
T* OptOut(const StridedView& v) {
  return v.data == nullptr ? nullptr : v.ptr<T>();
}

}  // namespace

absl::Status LayerNormForward(const StridedView& x, int64_t m, int64_t n,
                              const StridedView& weight,
                              const StridedView& bias, double eps,
                              const StridedView& y, const StridedView& mean,
                              const StridedView& rstd) {
  return DispatchFloat(x.dtype, "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    if (m == 0) return;
    Forward<T>(x.ptr<const T>(), m, n, Opt<T>(weight), Opt<T>(bias), eps,
               y.ptr<T>(), mean.ptr<T>(), rstd.ptr<T>());
  });
}

absl::Status LayerNormBackward(const StridedView& dy, const StridedView& x,
                               int64_t m, int64_t n, const StridedView& mean,
                               const StridedView& rstd,
                               const StridedView& weight, const StridedView& dx,
                               const StridedView& dweight,
                               const StridedView& dbias) {
  return DispatchFloat(x.dtype, "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    T* dw = OptOut<T>(dweight);
    T* db = OptOut<T>(dbias);
    if (m == 0) {  // no rows: the parameter gradients are zeros
      for (int64_t k = 0; k < n; ++k) {
        if (dw != nullptr) dw[k] = 0;
        if (db != nullptr) db[k] = 0;
      }
      return;
    }
    Backward<T>(dy.ptr<const T>(), x.ptr<const T>(), m, n, mean.ptr<const T>(),
                rstd.ptr<const T>(), Opt<T>(weight), OptOut<T>(dx), dw, db);
  });
}

}  // namespace cpu
}  // namespace tensord

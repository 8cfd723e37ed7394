#include "kernels/cpu/group_norm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math_avx2.h"

namespace tensord {
namespace cpu {
namespace {

// Note [CPU group_norm]: one item of the pool is an (n, group) pair, whose
// D * HxW values are contiguous (25 KB at ResNet's [32, 64, 28, 28] with 8
// groups: in L1/L2 between a pair's two passes). The statistics are two
// passes (the mean, then squares about it: no cancellation as in E[x^2] -
// mean^2), each sum in 32 independent lanes finished in double (the loops
// vectorise without -ffast-math), as layer_norm's portable rows (Note [CPU
// layer_norm]). The output pass is x * scale + shift per channel, scale =
// rstd * weight[c] and shift = bias[c] - mean * scale (ATen's CPU kernel's
// form). float32's items run the same templates compiled for AVX2 + FMA
// where the CPU has it (gelu.cc's and layer_norm.cc's pattern: the TU is
// built without -mavx2). A pass is split over the pool from ~256K (forward)
// or ~128K (backward) elements, layer_norm's thresholds.
constexpr int kLanes = 32;

template <typename T>
__attribute__((always_inline)) inline double Sum(const T* p, int64_t len) {
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lanes[j] += p[i + j];
  }
  double s = 0;
  for (; i < len; ++i) s += p[i];
  for (int j = 0; j < kLanes; ++j) s += lanes[j];
  return s;
}

// Sum of (p - m)^2.
template <typename T>
__attribute__((always_inline)) inline double Squares(const T* p, int64_t len,
                                                     T m) {
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const T d = p[i + j] - m;
      lanes[j] += d * d;
    }
  }
  double s = 0;
  for (; i < len; ++i) s += double(p[i] - m) * double(p[i] - m);
  for (int j = 0; j < kLanes; ++j) s += lanes[j];
  return s;
}

// sum(g * p) and sum(g) over len values.
template <typename T>
__attribute__((always_inline)) inline void DotSums(const T* g, const T* p,
                                                   int64_t len, double* ds,
                                                   double* db) {
  T la[kLanes] = {}, lb[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      la[j] += g[i + j] * p[i + j];
      lb[j] += g[i + j];
    }
  }
  double a = 0, b = 0;
  for (; i < len; ++i) a += double(g[i]) * double(p[i]), b += g[i];
  for (int j = 0; j < kLanes; ++j) a += la[j], b += lb[j];
  *ds = a;
  *db = b;
}

// The (n, group) items [first, last) of the forward (item i = n * groups +
// group: its values start at x + i * D * HxW, its stats at mean[i]).
template <typename T>
__attribute__((always_inline)) inline void ForwardItems(
    const T* x, int64_t first, int64_t last, const GroupNormShape& s,
    const T* w, const T* b, double eps, T* y, T* mean_out, T* rstd_out) {
  const int64_t d = s.c / s.groups, len = d * s.hw;
  for (int64_t i = first; i < last; ++i) {
    const T* p = x + i * len;
    T* q = y + i * len;
    const T tm = static_cast<T>(Sum(p, len) / static_cast<double>(len));
    const double sq = Squares(p, len, tm);
    const T ts =
        static_cast<T>(1.0 / std::sqrt(sq / static_cast<double>(len) + eps));
    const int64_t c0 = (i % s.groups) * d;
    for (int64_t k = 0; k < d; ++k) {
      const T scale = w != nullptr ? ts * w[c0 + k] : ts;
      const T shift = (b != nullptr ? b[c0 + k] : T(0)) - tm * scale;
      const T* pc = p + k * s.hw;
      T* qc = q + k * s.hw;
      for (int64_t j = 0; j < s.hw; ++j) qc[j] = pc[j] * scale + shift;
    }
    mean_out[i] = tm;
    rstd_out[i] = ts;
  }
}

TENSORD_AVX2 void ForwardItemsAvx2(const float* x, int64_t first, int64_t last,
                                   const GroupNormShape& s, const float* w,
                                   const float* b, double eps, float* y,
                                   float* mean_out, float* rstd_out) {
  ForwardItems<float>(x, first, last, s, w, b, eps, y, mean_out, rstd_out);
}

// The backward's items: the per-channel sums ds = sum(dy * x) and db =
// sum(dy) into ds/db [n * c] (kept for the weight's and bias's gradients),
// then, when dx is wanted, ATen's per-group coefficients (with
// gs = sum_c ds * w, gb = sum_c db * w, s = 1 / (D * HxW)):
//   c2 = (gb * mean - gs) * rstd^3 * s,  c3 = -c2 * mean - gb * rstd * s,
//   dx = rstd * w[c] * dy + c2 * x + c3.
template <typename T>
__attribute__((always_inline)) inline void BackwardItems(
    const T* dy, const T* x, int64_t first, int64_t last,
    const GroupNormShape& s, const T* mean, const T* rstd, const T* w, T* dx,
    double* ds, double* db) {
  const int64_t d = s.c / s.groups, len = d * s.hw;
  for (int64_t i = first; i < last; ++i) {
    const T* g = dy + i * len;
    const T* p = x + i * len;
    const int64_t c0 = (i % s.groups) * d;
    double* dsi = ds + i * d;  // i * d == n * c + c0
    double* dbi = db + i * d;
    double gs = 0, gb = 0;
    for (int64_t k = 0; k < d; ++k) {
      DotSums(g + k * s.hw, p + k * s.hw, s.hw, dsi + k, dbi + k);
      const double wk = w != nullptr ? double(w[c0 + k]) : 1.0;
      gs += dsi[k] * wk;
      gb += dbi[k] * wk;
    }
    if (dx == nullptr) continue;
    const double m = mean[i], r = rstd[i];
    const double inv = 1.0 / static_cast<double>(len);
    const double c2 = (gb * m - gs) * r * r * r * inv;
    const T t2 = static_cast<T>(c2);
    const T t3 = static_cast<T>(-c2 * m - gb * r * inv);
    T* q = dx + i * len;
    for (int64_t k = 0; k < d; ++k) {
      const T t1 = static_cast<T>(w != nullptr ? r * double(w[c0 + k]) : r);
      const T* gc = g + k * s.hw;
      const T* pc = p + k * s.hw;
      T* qc = q + k * s.hw;
      for (int64_t j = 0; j < s.hw; ++j) qc[j] = t1 * gc[j] + t2 * pc[j] + t3;
    }
  }
}

TENSORD_AVX2 void BackwardItemsAvx2(const float* dy, const float* x,
                                    int64_t first, int64_t last,
                                    const GroupNormShape& s, const float* mean,
                                    const float* rstd, const float* w,
                                    float* dx, double* ds, double* db) {
  BackwardItems<float>(dy, x, first, last, s, mean, rstd, w, dx, ds, db);
}

template <typename T>
void Forward(const T* x, const GroupNormShape& s, const T* w, const T* b,
             double eps, T* y, T* mean, T* rstd) {
  const int64_t len = s.c / s.groups * s.hw;
  ParallelFor(s.n * s.groups, std::max<int64_t>(len / 4, 1),
              [&](int64_t first, int64_t last) {
                if constexpr (std::is_same_v<T, float>) {
                  if (internal::CpuHasAvx2Fma()) {
                    ForwardItemsAvx2(x, first, last, s, w, b, eps, y, mean,
                                     rstd);
                    return;
                  }
                }
                ForwardItems<T>(x, first, last, s, w, b, eps, y, mean, rstd);
              });
}

// The weight's gradient sum_n (ds - db * mean) * rstd and the bias's
// sum_n db, per channel, in n order (the same sums whatever the split).
template <typename T>
void Backward(const T* dy, const T* x, const GroupNormShape& s, const T* mean,
              const T* rstd, const T* w, T* dx, T* dw, T* db) {
  const int64_t d = s.c / s.groups, len = d * s.hw;
  std::vector<double> sums(static_cast<size_t>(2 * s.n * s.c));
  double* cs = sums.data();
  double* cb = cs + s.n * s.c;
  ParallelFor(s.n * s.groups, std::max<int64_t>(len / 2, 1),
              [&](int64_t first, int64_t last) {
                if constexpr (std::is_same_v<T, float>) {
                  if (internal::CpuHasAvx2Fma()) {
                    BackwardItemsAvx2(dy, x, first, last, s, mean, rstd, w, dx,
                                      cs, cb);
                    return;
                  }
                }
                BackwardItems<T>(dy, x, first, last, s, mean, rstd, w, dx, cs,
                                 cb);
              });
  if (dw == nullptr && db == nullptr) return;
  for (int64_t ch = 0; ch < s.c; ++ch) {
    double sw = 0, sb = 0;
    for (int64_t i = 0; i < s.n; ++i) {
      const int64_t stat = i * s.groups + ch / d;
      const int64_t at = i * s.c + ch;
      sw += (cs[at] - cb[at] * double(mean[stat])) * double(rstd[stat]);
      sb += cb[at];
    }
    if (dw != nullptr) dw[ch] = static_cast<T>(sw);
    if (db != nullptr) db[ch] = static_cast<T>(sb);
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

absl::Status GroupNormForward(const StridedView& x, const GroupNormShape& s,
                              const StridedView& weight,
                              const StridedView& bias, double eps,
                              const StridedView& y, const StridedView& mean,
                              const StridedView& rstd) {
  return DispatchFloat(x.dtype, "native_group_norm", [&](auto tag) {
    using T = decltype(tag);
    if (s.n * s.groups == 0) return;
    T* mu = mean.ptr<T>();
    T* rs = rstd.ptr<T>();
    if (s.c * s.hw == 0) {  // empty groups: mean 0, variance 0
      std::fill(mu, mu + s.n * s.groups, T(0));
      std::fill(rs, rs + s.n * s.groups, static_cast<T>(1 / std::sqrt(eps)));
      return;
    }
    Forward<T>(x.ptr<const T>(), s, Opt<T>(weight), Opt<T>(bias), eps,
               y.ptr<T>(), mu, rs);
  });
}

absl::Status GroupNormBackward(const StridedView& dy, const StridedView& x,
                               const GroupNormShape& s,
                               const StridedView& mean, const StridedView& rstd,
                               const StridedView& weight, const StridedView& dx,
                               const StridedView& dweight,
                               const StridedView& dbias) {
  return DispatchFloat(x.dtype, "native_group_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    T* dw = OptOut<T>(dweight);
    T* db = OptOut<T>(dbias);
    if (s.n * s.c * s.hw == 0) {  // no values: the parameter gradients are 0
      if (dw != nullptr) std::fill(dw, dw + s.c, T(0));
      if (db != nullptr) std::fill(db, db + s.c, T(0));
      return;
    }
    Backward<T>(dy.ptr<const T>(), x.ptr<const T>(), s, mean.ptr<const T>(),
                rstd.ptr<const T>(), Opt<T>(weight), OptOut<T>(dx), dw, db);
  });
}

}  // namespace cpu
}  // namespace tensord

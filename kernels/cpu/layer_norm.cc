#include "kernels/cpu/layer_norm.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"

namespace tensord {
namespace cpu {
namespace {

template <typename T>
void Forward(const T* x, int64_t m, int64_t n, const T* w, const T* b,
             double eps, T* y, T* mean_out, T* rstd_out) {
  ParallelFor(m, n * 3, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* p = x + r * n;
      T* q = y + r * n;
      const double mean = internal::RowSum(p, n) / static_cast<double>(n);
      const T tm = static_cast<T>(mean);
      constexpr int kLanes = 8;  // independent lanes: the loop vectorises
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
  });
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
  ParallelForSlots(m, n * 4, [&](int slot, int64_t first, int64_t last) {
    double* aw =
        params ? acc.data() + static_cast<size_t>(slot) * 2 * n : nullptr;
    double* ab = params ? aw + n : nullptr;
    for (int64_t r = first; r < last; ++r) {
      const T* g = dy + r * n;
      const T* p = x + r * n;
      const T tm = mean[r], ts = rstd[r];
      double a = 0, b = 0;  // sum(g * xhat), sum(g)
      {
        constexpr int kLanes = 8;
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
      if (params) {
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

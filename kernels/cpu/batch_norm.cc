#include "kernels/cpu/batch_norm.h"

#include <cmath>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

struct Dims {
  int64_t n, c, s;
};

Dims DimsOf(const StridedView& x) {
  Dims d{x.sizes[0], x.ndim > 1 ? x.sizes[1] : 1, 1};
  for (int i = 2; i < x.ndim; ++i) d.s *= x.sizes[i];
  return d;
}

template <typename T>
void Forward(const T* x, const T* w, const T* b, double eps, Dims d, T* y,
             T* mean_out, T* var_out) {
  ParallelFor(d.c, d.n * d.s * 3, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      double sum = 0;
      for (int64_t n = 0; n < d.n; ++n) {
        const T* p = x + (n * d.c + c) * d.s;
        T part = 0;  // a vectorisable run; its total joins in double
        for (int64_t i = 0; i < d.s; ++i) part += p[i];
        sum += part;
      }
      const double m = static_cast<double>(d.n * d.s);
      const double mean = sum / m;
      double sq = 0;
      const T tm = static_cast<T>(mean);
      for (int64_t n = 0; n < d.n; ++n) {
        const T* p = x + (n * d.c + c) * d.s;
        T part = 0;
        for (int64_t i = 0; i < d.s; ++i) part += (p[i] - tm) * (p[i] - tm);
        sq += part;
      }
      const double var = sq / m;
      const double invstd = 1.0 / std::sqrt(var + eps);
      const double scale = invstd * (w != nullptr ? double{w[c]} : 1.0);
      const double shift = (b != nullptr ? double{b[c]} : 0.0) - mean * scale;
      const T ts = static_cast<T>(scale), tsh = static_cast<T>(shift);
      for (int64_t n = 0; n < d.n; ++n) {
        const T* p = x + (n * d.c + c) * d.s;
        T* q = y + (n * d.c + c) * d.s;
        for (int64_t i = 0; i < d.s; ++i) q[i] = p[i] * ts + tsh;
      }
      mean_out[c] = static_cast<T>(mean);
      var_out[c] = static_cast<T>(var);
    }
  });
}

template <typename T>
void Backward(const T* dy, const T* x, const T* mean_in, const T* var_in,
              const T* w, double eps, Dims d, T* dx, T* dw, T* db) {
  ParallelFor(d.c, d.n * d.s * 3, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      const T tm = mean_in[c];
      double sum_dy = 0, sum_dy_xmu = 0;
      for (int64_t n = 0; n < d.n; ++n) {
        const T* g = dy + (n * d.c + c) * d.s;
        const T* p = x + (n * d.c + c) * d.s;
        T a = 0, b = 0;
        for (int64_t i = 0; i < d.s; ++i) {
          a += g[i];
          b += g[i] * (p[i] - tm);
        }
        sum_dy += a, sum_dy_xmu += b;
      }
      const double invstd = 1.0 / std::sqrt(double{var_in[c]} + eps);
      const double wc = w != nullptr ? double{w[c]} : 1.0;
      if (dw != nullptr) dw[c] = static_cast<T>(sum_dy_xmu * invstd);
      if (db != nullptr) db[c] = static_cast<T>(sum_dy);
      if (dx == nullptr) continue;
      // dx = (dy - mean(dy) - (x - mean) invstd^2 mean(dy (x - mean)))
      //      invstd w: PyTorch's formula.
      const double m = static_cast<double>(d.n * d.s);
      const T k = static_cast<T>(invstd * invstd * sum_dy_xmu / m);
      const T mdy = static_cast<T>(sum_dy / m);
      const T scale = static_cast<T>(invstd * wc);
      for (int64_t n = 0; n < d.n; ++n) {
        const T* g = dy + (n * d.c + c) * d.s;
        const T* p = x + (n * d.c + c) * d.s;
        T* q = dx + (n * d.c + c) * d.s;
        for (int64_t i = 0; i < d.s; ++i) {
          q[i] = (g[i] - mdy - (p[i] - tm) * k) * scale;
        }
      }
    }
  });
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

absl::Status BatchNormForward(const StridedView& x, const StridedView& weight,
                              const StridedView& bias, double eps,
                              const StridedView& y, const StridedView& mean,
                              const StridedView& var) {
  return DispatchFloat(x.dtype, "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    Forward<T>(x.ptr<const T>(), Opt<T>(weight), Opt<T>(bias), eps, DimsOf(x),
               y.ptr<T>(), mean.ptr<T>(), var.ptr<T>());
  });
}

absl::Status BatchNormBackward(const StridedView& dy, const StridedView& x,
                               const StridedView& mean, const StridedView& var,
                               const StridedView& weight, double eps,
                               const StridedView& dx,
                               const StridedView& dweight,
                               const StridedView& dbias) {
  return DispatchFloat(x.dtype, "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    Backward<T>(dy.ptr<const T>(), x.ptr<const T>(), mean.ptr<const T>(),
                var.ptr<const T>(), Opt<T>(weight), eps, DimsOf(x),
                OptOut<T>(dx), OptOut<T>(dweight), OptOut<T>(dbias));
  });
}

}  // namespace cpu
}  // namespace tensord

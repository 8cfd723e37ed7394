#include "kernels/cpu/nn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

// exp for float written so the loop vectorises (Cephes' expf polynomial,
// ~1 ulp; std::exp is a library call per element).
inline float VecExp(float x) {
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
  return y * scale;
}

// Reductions with independent lanes so the loops vectorise without
// reassociation flags.
template <typename T>
T RowMax(const T* x, int64_t n) {
  constexpr int kLanes = 8;
  T lanes[kLanes];
  for (int j = 0; j < kLanes; ++j)
    lanes[j] = -std::numeric_limits<T>::infinity();
  int64_t i = 0;
  // NaN wins (x != x), as PyTorch's max propagates it.
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

// y = exp(x - max) / sum, or x - max - log(sum); y is scratch in between.
template <typename T>
void SoftmaxRow(const T* x, T* y, int64_t n, bool log) {
  T m = RowMax(x, n);
  if (std::isinf(m) && m < 0) m = 0;  // an all -inf row: NaN as PyTorch
  double sum;
  if constexpr (std::is_same_v<T, float>) {
    // exp and its sum in one pass, with 8 independent float lanes.
    float lanes[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      for (int j = 0; j < 8; ++j) {
        const float e = VecExp(x[i + j] - m);
        y[i + j] = e;
        lanes[j] += e;
      }
    }
    sum = 0;
    for (; i < n; ++i) sum += (y[i] = VecExp(x[i] - m));
    for (int j = 0; j < 8; ++j) sum += lanes[j];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - m);
    sum = RowSum(y, n);
  }
  if (log) {
    const T lse = m + static_cast<T>(std::log(sum));
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] - lse;
  } else {
    const T inv = static_cast<T>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
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
        for (int64_t o = b; o < e; ++o)
          SoftmaxRow(x + o * dim, y + o * dim, dim, log);
      });
      return;
    }
    ParallelFor(outer * inner, dim * 8, [&](int64_t b, int64_t e) {
      std::vector<T> xs(dim), ys(dim);
      for (int64_t r = b; r < e; ++r) {
        const int64_t o = r / inner, i = r % inner;
        for (int64_t d = 0; d < dim; ++d) xs[d] = x[(o * dim + d) * inner + i];
        SoftmaxRow(xs.data(), ys.data(), dim, log);
        for (int64_t d = 0; d < dim; ++d) y[(o * dim + d) * inner + i] = ys[d];
      }
    });
  });
}

absl::Status MaxPool2d(const StridedView& in, const Window2d& w,
                       const StridedView& out) {
  const int64_t planes = in.sizes[0] * in.sizes[1], h = in.sizes[2],
                wd = in.sizes[3];
  return DispatchFloat(in.dtype, "max_pool2d", [&](auto tag) {
    using T = decltype(tag);
    ParallelFor(planes, w.oh * w.ow * w.kh * w.kw, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* x = in.ptr<const T>() + p * h * wd;
        T* y = out.ptr<T>() + p * w.oh * w.ow;
        std::fill(y, y + w.oh * w.ow, -std::numeric_limits<T>::infinity());
        // Taps in the order (row, column) for each output, as one output
        // row at a time so the column loops vectorise.
        for (int64_t i = 0; i < w.oh; ++i) {
          int64_t lo, hi;
          internal::Taps(i * w.sh - w.ph, w.dh, w.kh, h, &lo, &hi);
          for (int64_t a = lo; a < hi; ++a) {
            const int64_t r = i * w.sh - w.ph + a * w.dh;
            internal::MaxPoolRow(x + r * wd, wd, w, y + i * w.ow);
          }
        }
      }
    });
  });
}

absl::Status AvgPool2d(const StridedView& in, const Window2d& w,
                       bool count_include_pad, const StridedView& out) {
  const int64_t planes = in.sizes[0] * in.sizes[1], h = in.sizes[2],
                wd = in.sizes[3];
  return DispatchFloat(in.dtype, "avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    ParallelFor(planes, w.oh * w.ow * w.kh * w.kw, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* x = in.ptr<const T>() + p * h * wd;
        T* y = out.ptr<T>() + p * w.oh * w.ow;
        for (int64_t i = 0; i < w.oh; ++i) {
          for (int64_t j = 0; j < w.ow; ++j) {
            int64_t r0 = i * w.sh - w.ph, c0 = j * w.sw - w.pw;
            int64_t r1 = std::min(r0 + w.kh, h + w.ph),
                    c1 = std::min(c0 + w.kw, wd + w.pw);
            const int64_t padded = (r1 - r0) * (c1 - c0);
            r0 = std::max<int64_t>(r0, 0);
            c0 = std::max<int64_t>(c0, 0);
            r1 = std::min(r1, h);
            c1 = std::min(c1, wd);
            double s = 0;
            for (int64_t r = r0; r < r1; ++r) {
              for (int64_t q = c0; q < c1; ++q) s += x[r * wd + q];
            }
            const int64_t count =
                count_include_pad ? padded : (r1 - r0) * (c1 - c0);
            y[i * w.ow + j] = static_cast<T>(s / static_cast<double>(count));
          }
        }
      }
    });
  });
}

absl::Status AdaptiveAvgPool2d(const StridedView& in, const StridedView& out) {
  const int64_t planes = in.sizes[0] * in.sizes[1], h = in.sizes[2],
                wd = in.sizes[3], oh = out.sizes[2], ow = out.sizes[3];
  return DispatchFloat(in.dtype, "adaptive_avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    ParallelFor(planes, h * wd, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* x = in.ptr<const T>() + p * h * wd;
        T* y = out.ptr<T>() + p * oh * ow;
        for (int64_t i = 0; i < oh; ++i) {
          const int64_t r0 = i * h / oh, r1 = ((i + 1) * h + oh - 1) / oh;
          for (int64_t j = 0; j < ow; ++j) {
            const int64_t c0 = j * wd / ow, c1 = ((j + 1) * wd + ow - 1) / ow;
            double s = 0;
            for (int64_t r = r0; r < r1; ++r) {
              for (int64_t q = c0; q < c1; ++q) s += x[r * wd + q];
            }
            y[i * ow + j] =
                static_cast<T>(s / static_cast<double>((r1 - r0) * (c1 - c0)));
          }
        }
      }
    });
  });
}

}  // namespace cpu
}  // namespace tensord

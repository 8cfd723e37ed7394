#include "kernels/cpu/upsample_aa.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cpu {
namespace {

// The expressions below keep ATen's types on purpose (double literals, int64
// indices, T storage): the weights must round as ATen's do.

// area_pixel_compute_scale: input over output size, or 1 / scale when given.
template <typename T>
T AreaScale(int64_t in, int64_t out, bool align_corners,
            std::optional<double> scale) {
  if (align_corners) {
    return out > 1 ? static_cast<T>(in - 1) / (out - 1) : static_cast<T>(0);
  }
  return (scale.has_value() && *scale > 0.) ? static_cast<T>(1.0 / *scale)
                                            : (static_cast<T>(in) / out);
}

// PIL's triangle filter (HelperInterpLinear::aa_filter).
template <typename T>
T Triangle(T x) {
  x = std::abs(x);
  if (x < 1.0) return 1.0 - x;
  return 0.0;
}

// One dim's taps: output i reads `size[i]` inputs from `min[i]` with weights
// w[i * max_size ...] (HelperInterpBase::_compute_indices_min_size_weights_aa).
template <typename T>
struct Taps {
  int64_t max_size = 0;
  std::vector<int64_t> min, size;
  std::vector<T> w;
};

template <typename T>
void TapsOf(int64_t i, int64_t input_size, T scale, T support, T* wt,
            int64_t max_size, int64_t* xmin, int64_t* xsize) {
  T center = scale * (i + 0.5);
  T total_w = 0.0;
  T invscale = (scale >= 1.0) ? 1.0 / scale : 1.0;
  *xmin = std::max(static_cast<int64_t>(center - support + 0.5),
                   static_cast<int64_t>(0));
  *xsize = std::min(static_cast<int64_t>(center + support + 0.5), input_size) -
           *xmin;
  *xsize = std::clamp(*xsize, static_cast<int64_t>(0), max_size);
  int64_t j = 0;
  for (; j < *xsize; j++) {
    T w = Triangle<T>((j + *xmin - center + 0.5) * invscale);
    wt[j] = w;
    total_w += w;
  }
  if (total_w != 0.0) {
    for (j = 0; j < *xsize; j++) wt[j] /= total_w;
  }
  for (; j < max_size; j++) wt[j] = static_cast<T>(0.0);
}

// backward: the window's width from ceilf (float) whatever T is, as ATen's.
// A scale whose windows reach past 2^52 (a tiny scales_h/scales_w; ATen's
// int casts overflow there) is refused. The weights' row stride is the
// window width capped at in + 2: a window never holds more than `in` inputs,
// so the cap changes no tap (the clamp of xsize to it never bites).
template <typename T>
absl::StatusOr<Taps<T>> DimTaps(int64_t in, int64_t out, bool align_corners,
                                std::optional<double> s, bool backward) {
  const T scale = AreaScale<T>(in, out, align_corners, s);
  const int interp_size = 2;
  const T support =
      (scale >= 1.0) ? (interp_size * 0.5) * scale : interp_size * 0.5;
  const double reach =
      static_cast<double>(scale) * (static_cast<double>(out) + 1.0) +
      static_cast<double>(support);
  if (!(reach < 4503599627370496.0)) {  // 2^52; NaN and inf too
    return absl::InvalidArgumentError(absl::StrCat(
        "the scale ", static_cast<double>(scale), " (input ", in, " to output ",
        out, ") makes the filter window too large"));
  }
  Taps<T> t;
  const int64_t width = (backward ? static_cast<int64_t>(ceilf(support))
                                  : static_cast<int64_t>(std::ceil(support))) *
                            2 +
                        1;
  t.max_size = std::min(width, in + 2);
  t.min.resize(out);
  t.size.resize(out);
  t.w.resize(out * t.max_size);
  for (int64_t i = 0; i < out; ++i) {
    TapsOf<T>(i, in, scale, support, t.w.data() + i * t.max_size, t.max_size,
              &t.min[i], &t.size[i]);
  }
  return t;
}

// out = sum_j src[(min + j) * step] * w[j], in ATen's order (first product,
// then +=).
template <typename T>
inline T Tap(const T* src, int64_t step, const Taps<T>& t, int64_t i) {
  const int64_t n = t.size[i];
  if (n == 0) return T(0);
  const T* s = src + t.min[i] * step;
  const T* w = t.w.data() + i * t.max_size;
  T acc = s[0] * w[0];
  for (int64_t j = 1; j < n; ++j) acc += s[j * step] * w[j];
  return acc;
}

struct Dims {
  int64_t planes, h, w, oh, ow;
};

Dims DimsOf(const StridedView& in, const StridedView& out) {
  return {in.sizes[0] * in.sizes[1], in.sizes[2], in.sizes[3], out.sizes[2],
          out.sizes[3]};
}

template <typename T>
absl::Status Forward(const T* x, T* y, const Dims& d, const AaResample& how) {
  const bool wide = d.ow != d.w, tall = d.oh != d.h;
  if (!wide && !tall) {
    std::memcpy(y, x, sizeof(T) * d.planes * d.h * d.w);
    return absl::OkStatus();
  }
  std::vector<T> scratch;
  const T* src = x;
  if (wide) {  // rows: [planes * h, w] -> [planes * h, ow]
    TD_ASSIGN_OR_RETURN(
        const Taps<T> t,
        DimTaps<T>(d.w, d.ow, how.align_corners, how.scale_w, false));
    T* dst = y;
    if (tall) {
      scratch.resize(d.planes * d.h * d.ow);
      dst = scratch.data();
    }
    ParallelFor(d.planes * d.h, d.ow * t.max_size, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        for (int64_t o = 0; o < d.ow; ++o) {
          dst[r * d.ow + o] = Tap(src + r * d.w, 1, t, o);
        }
      }
    });
    src = dst;
  }
  if (tall) {  // columns of each plane: [h, ow] -> [oh, ow]
    TD_ASSIGN_OR_RETURN(
        const Taps<T> t,
        DimTaps<T>(d.h, d.oh, how.align_corners, how.scale_h, false));
    ParallelFor(
        d.planes, d.oh * d.ow * t.max_size, [&](int64_t lo, int64_t hi) {
          for (int64_t p = lo; p < hi; ++p) {
            const T* plane = src + p * d.h * d.ow;
            for (int64_t o = 0; o < d.oh; ++o) {
              for (int64_t c = 0; c < d.ow; ++c) {
                y[(p * d.oh + o) * d.ow + c] = Tap(plane + c, d.ow, t, o);
              }
            }
          }
        });
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status Backward(const T* gy, T* gx, const Dims& d,
                      const AaResample& how) {
  TD_ASSIGN_OR_RETURN(const Taps<T> ty, DimTaps<T>(d.h, d.oh, how.align_corners,
                                                   how.scale_h, true));
  TD_ASSIGN_OR_RETURN(const Taps<T> tx, DimTaps<T>(d.w, d.ow, how.align_corners,
                                                   how.scale_w, true));
  std::fill(gx, gx + d.planes * d.h * d.w, T(0));
  ParallelFor(d.planes, d.oh * d.ow * ty.max_size * tx.max_size,
              [&](int64_t lo, int64_t hi) {
                for (int64_t oh = 0; oh < d.oh; ++oh) {
                  const T* wy = ty.w.data() + oh * ty.max_size;
                  for (int64_t ow = 0; ow < d.ow; ++ow) {
                    const T* wx = tx.w.data() + ow * tx.max_size;
                    for (int64_t p = lo; p < hi; ++p) {
                      const T g = gy[(p * d.oh + oh) * d.ow + ow];
                      T* plane = gx + p * d.h * d.w;
                      for (int64_t y = 0; y < ty.size[oh]; ++y) {
                        T* row = plane + (ty.min[oh] + y) * d.w + tx.min[ow];
                        for (int64_t x = 0; x < tx.size[ow]; ++x)
                          row[x] += wx[x] * wy[y] * g;
                      }
                    }
                  }
                }
              });
  return absl::OkStatus();
}

}  // namespace

absl::Status UpsampleBilinear2dAa(const StridedView& input,
                                  const StridedView& out,
                                  const AaResample& how) {
  TD_RETURN_IF_ERROR(RequireFloat(input.dtype, "_upsample_bilinear2d_aa"));
  const Dims d = DimsOf(input, out);
  if (input.dtype == DType::kFloat64) {
    return Forward(input.ptr<const double>(), out.ptr<double>(), d, how);
  }
  return Forward(input.ptr<const float>(), out.ptr<float>(), d, how);
}

absl::Status UpsampleBilinear2dAaBackward(const StridedView& grad_output,
                                          const StridedView& grad_input,
                                          const AaResample& how) {
  TD_RETURN_IF_ERROR(
      RequireFloat(grad_output.dtype, "_upsample_bilinear2d_aa_backward"));
  const Dims d = DimsOf(grad_input, grad_output);
  if (grad_output.dtype == DType::kFloat64) {
    return Backward(grad_output.ptr<const double>(), grad_input.ptr<double>(),
                    d, how);
  }
  return Backward(grad_output.ptr<const float>(), grad_input.ptr<float>(), d,
                  how);
}

}  // namespace cpu
}  // namespace tensord

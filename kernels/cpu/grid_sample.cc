#include "kernels/cpu/grid_sample.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/grid_coords.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

// Coordinates: grid_coords.h.
using grid_coords::Pad;
using grid_coords::SourceIndex;
using grid_coords::ToIndex;
using grid_coords::Unnormalize;

inline bool InBounds(int64_t h, int64_t w, int64_t H, int64_t W) {
  return h >= 0 && h < H && w >= 0 && w < W;
}

// ---- bicubic coefficients (A = -0.75, as PyTorch)
template <typename T>
void CubicCoefficients(T t, T c[4]) {
  const T A = static_cast<T>(-0.75);
  auto conv1 = [A](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  auto conv2 = [A](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  c[0] = conv2(t + 1);
  c[1] = conv1(t);
  c[2] = conv1(1 - t);
  c[3] = conv2(2 - t);
}

template <typename T>
void CubicCoefficientsGrad(T t, T c[4]) {
  const T A = static_cast<T>(-0.75);
  T x = -1 - t;
  c[0] = (-3 * A * x - 10 * A) * x - 8 * A;
  x = -t;
  c[1] = (-3 * (A + 2) * x - 2 * (A + 3)) * x;
  x = 1 - t;
  c[2] = (3 * (A + 2) * x - 2 * (A + 3)) * x;
  x = 2 - t;
  c[3] = (3 * A * x - 10 * A) * x + 8 * A;
}

struct Dims {
  int64_t C, H, W, Ho, Wo;
};

// The gradients of one image n. gi: its [C, H, W] input gradient (zeroed
// here) or null.
template <typename T>
void BackwardImage(const T* go, const T* in, const T* grid, const Dims& d,
                   GridInterpolation mode, GridPadding padding, bool align,
                   T* gi, T* gg) {
  const int64_t plane = d.H * d.W, out_plane = d.Ho * d.Wo;
  if (gi != nullptr) std::fill(gi, gi + d.C * plane, T(0));
  for (int64_t p = 0; p < out_plane; ++p) {
    const T x = grid[2 * p], y = grid[2 * p + 1];
    T gix = 0, giy = 0, gx_mult, gy_mult;
    if (mode == GridInterpolation::kBilinear) {
      const T ix = SourceIndex(x, d.W, padding, align, &gx_mult);
      const T iy = SourceIndex(y, d.H, padding, align, &gy_mult);
      const T x0 = std::floor(ix), y0 = std::floor(iy), x1 = x0 + 1,
              y1 = y0 + 1;
      const int64_t ix0 = ToIndex(x0), iy0 = ToIndex(y0);
      const T nw = (x1 - ix) * (y1 - iy), ne = (ix - x0) * (y1 - iy),
              sw = (x1 - ix) * (iy - y0), se = (ix - x0) * (iy - y0);
      const bool b_nw = InBounds(iy0, ix0, d.H, d.W),
                 b_ne = InBounds(iy0, ix0 + 1, d.H, d.W),
                 b_sw = InBounds(iy0 + 1, ix0, d.H, d.W),
                 b_se = InBounds(iy0 + 1, ix0 + 1, d.H, d.W);
      const int64_t o_nw = iy0 * d.W + ix0;
      for (int64_t c = 0; c < d.C; ++c) {
        const T g = go[c * out_plane + p];
        const T* ic = in + c * plane;
        T* gc = gi == nullptr ? nullptr : gi + c * plane;
        if (b_nw) {
          if (gc) gc[o_nw] += nw * g;
          gix -= ic[o_nw] * (y1 - iy) * g;
          giy -= ic[o_nw] * (x1 - ix) * g;
        }
        if (b_ne) {
          if (gc) gc[o_nw + 1] += ne * g;
          gix += ic[o_nw + 1] * (y1 - iy) * g;
          giy -= ic[o_nw + 1] * (ix - x0) * g;
        }
        if (b_sw) {
          if (gc) gc[o_nw + d.W] += sw * g;
          gix -= ic[o_nw + d.W] * (iy - y0) * g;
          giy += ic[o_nw + d.W] * (x1 - ix) * g;
        }
        if (b_se) {
          if (gc) gc[o_nw + d.W + 1] += se * g;
          gix += ic[o_nw + d.W + 1] * (iy - y0) * g;
          giy += ic[o_nw + d.W + 1] * (ix - x0) * g;
        }
      }
      gg[2 * p] = gx_mult * gix;
      gg[2 * p + 1] = gy_mult * giy;
    } else if (mode == GridInterpolation::kNearest) {
      const T ix = SourceIndex(x, d.W, padding, align, &gx_mult);
      const T iy = SourceIndex(y, d.H, padding, align, &gy_mult);
      const int64_t xn = ToIndex(std::nearbyint(ix)),
                    yn = ToIndex(std::nearbyint(iy));
      if (gi != nullptr && InBounds(yn, xn, d.H, d.W)) {
        for (int64_t c = 0; c < d.C; ++c) {
          gi[c * plane + yn * d.W + xn] += go[c * out_plane + p];
        }
      }
      gg[2 * p] = 0;
      gg[2 * p + 1] = 0;
    } else {  // bicubic: padding applies to each of the 4 x 4 taps
      const T ix = Unnormalize(x, d.W, align, &gx_mult);
      const T iy = Unnormalize(y, d.H, align, &gy_mult);
      const T x0 = std::floor(ix), y0 = std::floor(iy);
      T cx[4], cy[4], dcx[4], dcy[4];
      CubicCoefficients(ix - x0, cx);
      CubicCoefficients(iy - y0, cy);
      CubicCoefficientsGrad(ix - x0, dcx);
      CubicCoefficientsGrad(iy - y0, dcy);
      int64_t tap[4][4];  // offset in the plane, or -1 outside it
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          T unused;
          const T px = Pad(x0 - 1 + i, d.W, padding, align, &unused);
          const T py = Pad(y0 - 1 + j, d.H, padding, align, &unused);
          const int64_t tx = ToIndex(px), ty = ToIndex(py);
          tap[i][j] = InBounds(ty, tx, d.H, d.W) ? ty * d.W + tx : -1;
        }
      }
      for (int64_t c = 0; c < d.C; ++c) {
        const T g = go[c * out_plane + p];
        const T* ic = in + c * plane;
        T* gc = gi == nullptr ? nullptr : gi + c * plane;
        for (int i = 0; i < 4; ++i) {
          for (int j = 0; j < 4; ++j) {
            if (tap[i][j] < 0) continue;
            if (gc) gc[tap[i][j]] += g * cx[i] * cy[j];
            const T v = ic[tap[i][j]];
            gix -= v * dcx[i] * cy[j] * g;
            giy -= v * dcy[j] * cx[i] * g;
          }
        }
      }
      gg[2 * p] = gx_mult * gix;
      gg[2 * p + 1] = gy_mult * giy;
    }
  }
}

template <typename T>
void Backward(const StridedView& grad, const StridedView& input,
              const StridedView& grid, GridInterpolation mode,
              GridPadding padding, bool align, const StridedView& grad_input,
              const StridedView& grad_grid) {
  const Dims d{input.sizes[1], input.sizes[2], input.sizes[3], grad.sizes[2],
               grad.sizes[3]};
  const int64_t n = input.sizes[0];
  const int64_t in_image = d.C * d.H * d.W, out_image = d.C * d.Ho * d.Wo,
                grid_image = d.Ho * d.Wo * 2;
  const T* go = grad.ptr<const T>();
  const T* in = input.ptr<const T>();
  const T* gr = grid.ptr<const T>();
  T* gi = grad_input.data == nullptr ? nullptr : grad_input.ptr<T>();
  T* gg = grad_grid.ptr<T>();
  const int64_t taps = mode == GridInterpolation::kBicubic ? 16 : 4;
  ParallelFor(n, out_image * taps * 2, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      BackwardImage(go + b * out_image, in + b * in_image, gr + b * grid_image,
                    d, mode, padding, align,
                    gi == nullptr ? nullptr : gi + b * in_image,
                    gg + b * grid_image);
    }
  });
}

}  // namespace

absl::Status GridSampler2dBackward(
    const StridedView& grad, const StridedView& input, const StridedView& grid,
    GridInterpolation mode, GridPadding padding, bool align_corners,
    const StridedView& grad_input, const StridedView& grad_grid) {
  if (input.dtype == DType::kFloat64) {
    Backward<double>(grad, input, grid, mode, padding, align_corners,
                     grad_input, grad_grid);
  } else if (input.dtype == DType::kFloat32) {
    Backward<float>(grad, input, grid, mode, padding, align_corners, grad_input,
                    grad_grid);
  } else {
    return absl::InternalError(
        "grid_sampler_2d_backward: expected float32 or float64 data");
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace tensord

#include "kernels/cpu/grid_sample_3d.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/grid_coords.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

using grid_coords::SourceIndex;
using grid_coords::ToIndex;

struct Dims {
  int64_t C, D, H, W;  // input volume
  int64_t out_points;  // Do * Ho * Wo
  int64_t plane() const { return D * H * W; }
};

// One grid point's sampling: the source indices and, per axis, d index /
// d grid coordinate.
template <typename T>
struct Point {
  T ix, iy, iz, gx, gy, gz;
};

template <typename T>
Point<T> Locate(const T* g, const Dims& d, GridPadding padding, bool align) {
  Point<T> p;
  p.ix = SourceIndex(g[0], d.W, padding, align, &p.gx);
  p.iy = SourceIndex(g[1], d.H, padding, align, &p.gy);
  p.iz = SourceIndex(g[2], d.D, padding, align, &p.gz);
  return p;
}

// The 8 corners of a point's cell: offset in the volume (-1 outside it),
// trilinear weight, and the weight's derivatives along x, y, z (per unit
// of source index).
template <typename T>
struct Corners {
  int64_t offset[8];
  T w[8], dx[8], dy[8], dz[8];
};

template <typename T>
Corners<T> CornersOf(const Point<T>& p, const Dims& d) {
  Corners<T> c;
  const T x0 = std::floor(p.ix), y0 = std::floor(p.iy), z0 = std::floor(p.iz);
  const T wx[2] = {x0 + 1 - p.ix, p.ix - x0},
          wy[2] = {y0 + 1 - p.iy, p.iy - y0},
          wz[2] = {z0 + 1 - p.iz, p.iz - z0};
  const T sign[2] = {-1, 1};
  const int64_t ix0 = ToIndex(x0), iy0 = ToIndex(y0), iz0 = ToIndex(z0);
  int k = 0;
  for (int bz = 0; bz < 2; ++bz) {    // ATen's order: t(op) then b(ottom) ...
    for (int by = 0; by < 2; ++by) {  // ... n(orth) then s(outh) ...
      for (int bx = 0; bx < 2; ++bx, ++k) {  // ... w(est) then e(ast)
        const int64_t x = ix0 + bx, y = iy0 + by, z = iz0 + bz;
        const bool in =
            x >= 0 && x < d.W && y >= 0 && y < d.H && z >= 0 && z < d.D;
        c.offset[k] = in ? (z * d.H + y) * d.W + x : -1;
        c.w[k] = wx[bx] * wy[by] * wz[bz];
        c.dx[k] = sign[bx] * wy[by] * wz[bz];
        c.dy[k] = wx[bx] * sign[by] * wz[bz];
        c.dz[k] = wx[bx] * wy[by] * sign[bz];
      }
    }
  }
  return c;
}

// The nearest voxel's offset, or -1 outside the volume.
template <typename T>
int64_t Nearest(const Point<T>& p, const Dims& d) {
  const int64_t x = ToIndex(std::nearbyint(p.ix)),
                y = ToIndex(std::nearbyint(p.iy)),
                z = ToIndex(std::nearbyint(p.iz));
  const bool in = x >= 0 && x < d.W && y >= 0 && y < d.H && z >= 0 && z < d.D;
  return in ? (z * d.H + y) * d.W + x : -1;
}

template <typename T>
void Forward(const StridedView& input, const StridedView& grid,
             GridInterpolation mode, GridPadding padding, bool align,
             const StridedView& output) {
  const Dims d{input.sizes[1], input.sizes[2], input.sizes[3], input.sizes[4],
               output.sizes[2] * output.sizes[3] * output.sizes[4]};
  const int64_t n = input.sizes[0];
  const T* in = input.ptr<const T>();
  const T* gr = grid.ptr<const T>();
  T* out = output.ptr<T>();
  ParallelFor(n * d.out_points, d.C * 8, [&](int64_t lo, int64_t hi) {
    for (int64_t q = lo; q < hi; ++q) {
      const int64_t b = q / d.out_points, p = q % d.out_points;
      const Point<T> pt = Locate(gr + 3 * q, d, padding, align);
      const T* vol = in + b * d.C * d.plane();
      T* o = out + b * d.C * d.out_points + p;
      if (mode == GridInterpolation::kNearest) {
        const int64_t off = Nearest(pt, d);
        for (int64_t c = 0; c < d.C; ++c) {
          o[c * d.out_points] = off < 0 ? T(0) : vol[c * d.plane() + off];
        }
        continue;
      }
      const Corners<T> k = CornersOf(pt, d);
      for (int64_t c = 0; c < d.C; ++c) {
        const T* v = vol + c * d.plane();
        T acc = 0;
        for (int i = 0; i < 8; ++i) {
          if (k.offset[i] >= 0) acc += v[k.offset[i]] * k.w[i];
        }
        o[c * d.out_points] = acc;
      }
    }
  });
}

template <typename T>
void Backward(const StridedView& grad, const StridedView& input,
              const StridedView& grid, GridInterpolation mode,
              GridPadding padding, bool align, const StridedView& grad_input,
              const StridedView& grad_grid) {
  const Dims d{input.sizes[1], input.sizes[2], input.sizes[3], input.sizes[4],
               grad.sizes[2] * grad.sizes[3] * grad.sizes[4]};
  const int64_t n = input.sizes[0], in_image = d.C * d.plane(),
                out_image = d.C * d.out_points;
  const T* go = grad.ptr<const T>();
  const T* in = input.ptr<const T>();
  const T* gr = grid.ptr<const T>();
  T* gi = grad_input.data == nullptr ? nullptr : grad_input.ptr<T>();
  T* gg = grad_grid.ptr<T>();
  ParallelFor(n, out_image * 16, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const T* vol = in + b * in_image;
      const T* g_out = go + b * out_image;
      T* g_in = gi == nullptr ? nullptr : gi + b * in_image;
      if (g_in != nullptr) std::fill(g_in, g_in + in_image, T(0));
      for (int64_t p = 0; p < d.out_points; ++p) {
        const int64_t q = b * d.out_points + p;
        const Point<T> pt = Locate(gr + 3 * q, d, padding, align);
        T* ggp = gg + 3 * q;
        if (mode == GridInterpolation::kNearest) {
          const int64_t off = Nearest(pt, d);
          for (int64_t c = 0; g_in != nullptr && off >= 0 && c < d.C; ++c) {
            g_in[c * d.plane() + off] += g_out[c * d.out_points + p];
          }
          ggp[0] = ggp[1] = ggp[2] = 0;
          continue;
        }
        const Corners<T> k = CornersOf(pt, d);
        T gx = 0, gy = 0, gz = 0;
        for (int64_t c = 0; c < d.C; ++c) {
          const T g = g_out[c * d.out_points + p];
          const T* v = vol + c * d.plane();
          T* gv = g_in == nullptr ? nullptr : g_in + c * d.plane();
          for (int i = 0; i < 8; ++i) {
            if (k.offset[i] < 0) continue;
            if (gv != nullptr) gv[k.offset[i]] += k.w[i] * g;
            const T vg = v[k.offset[i]] * g;
            gx += vg * k.dx[i];
            gy += vg * k.dy[i];
            gz += vg * k.dz[i];
          }
        }
        ggp[0] = pt.gx * gx;
        ggp[1] = pt.gy * gy;
        ggp[2] = pt.gz * gz;
      }
    }
  });
}

bool Supported(const StridedView& v, GridInterpolation mode) {
  return (v.dtype == DType::kFloat32 || v.dtype == DType::kFloat64) &&
         mode != GridInterpolation::kBicubic;
}

}  // namespace

absl::Status GridSampler3d(const StridedView& input, const StridedView& grid,
                           GridInterpolation mode, GridPadding padding,
                           bool align_corners, const StridedView& output) {
  if (!Supported(input, mode)) {
    return absl::InternalError(
        "grid_sampler_3d: expected float32/float64 data, bilinear or nearest");
  }
  if (input.dtype == DType::kFloat64) {
    Forward<double>(input, grid, mode, padding, align_corners, output);
  } else {
    Forward<float>(input, grid, mode, padding, align_corners, output);
  }
  return absl::OkStatus();
}

absl::Status GridSampler3dBackward(
    const StridedView& grad, const StridedView& input, const StridedView& grid,
    GridInterpolation mode, GridPadding padding, bool align_corners,
    const StridedView& grad_input, const StridedView& grad_grid) {
  if (!Supported(input, mode)) {
    return absl::InternalError(
        "grid_sampler_3d_backward: expected float32/float64 data, bilinear "
        "or nearest");
  }
  if (input.dtype == DType::kFloat64) {
    Backward<double>(grad, input, grid, mode, padding, align_corners,
                     grad_input, grad_grid);
  } else {
    Backward<float>(grad, input, grid, mode, padding, align_corners, grad_input,
                    grad_grid);
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace tensord

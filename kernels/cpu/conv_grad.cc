#include "kernels/cpu/conv_grad.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

// Scratch per block of images, in elements: big enough that the GEMMs are
// large for OpenBLAS, small enough to stay out of the way (16 MiB float32).
constexpr int64_t kWorkspaceBudget = int64_t{1} << 22;

int64_t Rows(const ConvGeometry& g) { return g.c * g.win.kh * g.win.kw; }
int64_t Cols(const ConvGeometry& g) { return g.win.oh * g.win.ow; }

// Images per block: the workspace (`elems` long) holds the columns
// [Rows, nb * L] and the gathered grad [o, nb * L].
int64_t BlockImages(const ConvGeometry& g, int64_t elems) {
  const int64_t n = std::max<int64_t>(g.n, 1);
  const int64_t per_image = (Rows(g) + g.o) * Cols(g);
  if (per_image == 0) return n;
  return std::clamp<int64_t>(elems / per_image, 1, n);
}

// grad of images [n0, n0 + nb) as [o, nb * L] at `gt`: image j's plane of
// channel oc at row oc, columns [j * L, (j + 1) * L).
template <typename T>
void GatherGrad(const T* grad, const ConvGeometry& g, int64_t n0, int64_t nb,
                T* gt) {
  const int64_t l = Cols(g);
  ParallelFor(g.o * nb, l, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t oc = r / nb, j = r % nb;
      std::memcpy(gt + (oc * nb + j) * l, grad + ((n0 + j) * g.o + oc) * l,
                  l * sizeof(T));
    }
  });
}

// im2col of images [n0, n0 + nb) side by side: [Rows, nb * L] at `col`.
template <typename T>
void Columns(const T* input, const ConvGeometry& g, int64_t n0, int64_t nb,
             T* col) {
  const int64_t rows = Rows(g), l = Cols(g), ld = nb * l;
  ParallelFor(rows * nb, l, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t j = r / rows, row = r % rows;
      internal::Im2ColRow(input + (n0 + j) * g.c * g.h * g.w, g.h, g.w, g.win,
                          row, col + row * ld + j * l);
    }
  });
}

template <typename T>
void WeightGrad(const T* grad, const T* input, const ConvGeometry& g, T* ws,
                int64_t block, T* gw) {
  const int64_t og = g.o / g.groups, k = Rows(g) / g.groups, l = Cols(g);
  if (g.n * l == 0) {
    std::fill(gw, gw + g.o * k, T{0});
    return;
  }
  for (int64_t n0 = 0; n0 < g.n; n0 += block) {
    const int64_t nb = std::min(block, g.n - n0), ld = nb * l;
    T* col = ws;
    T* gt = ws + Rows(g) * ld;
    Columns(input, g, n0, nb, col);
    GatherGrad(grad, g, n0, nb, gt);
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      Gemm<T>(false, true, og, k, ld, gt + grp * og * ld, ld,
              col + grp * k * ld, ld, n0 == 0 ? T{0} : T{1}, gw + grp * og * k,
              k);
    }
  }
}

template <typename T>
void InputGrad(const T* grad, const T* weight, const ConvGeometry& g, T* ws,
               int64_t block, T* gi) {
  const int64_t og = g.o / g.groups, k = Rows(g) / g.groups, l = Cols(g);
  const int64_t plane = g.h * g.w;
  if (og == 0 || l == 0) {
    std::fill(gi, gi + g.n * g.c * plane, T{0});
    return;
  }
  for (int64_t n0 = 0; n0 < g.n; n0 += block) {
    const int64_t nb = std::min(block, g.n - n0), ld = nb * l;
    T* col = ws;
    T* gt = ws + Rows(g) * ld;
    GatherGrad(grad, g, n0, nb, gt);
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      Gemm<T>(true, false, k, ld, og, weight + grp * og * k, k,
              gt + grp * og * ld, ld, T{0}, col + grp * k * ld, ld);
    }
    ParallelFor(nb * g.c, Rows(g) / std::max<int64_t>(g.c, 1) * l + plane,
                [&](int64_t b, int64_t e) {
                  for (int64_t p = b; p < e; ++p) {
                    const int64_t j = p / g.c, c = p % g.c;
                    T* dst = gi + ((n0 + j) * g.c + c) * plane;
                    std::fill(dst, dst + plane, T{0});
                    internal::Col2ImPlane(col + j * l, ld, g.h, g.w, g.win, c,
                                          dst);
                  }
                });
  }
}

// The flat index of the last NaN among output (row r0, column j)'s taps.
template <typename T>
int64_t LastNaN(const T* x, int64_t wd, const Window2d& w, int64_t lo,
                int64_t hi, int64_t r0, int64_t j) {
  int64_t at = -1;
  for (int64_t a = lo; a < hi; ++a) {
    for (int64_t k = 0; k < w.kw; ++k) {
      const int64_t r = r0 + a * w.dh, q = j * w.sw - w.pw + k * w.dw;
      if (q >= 0 && q < wd && std::isnan(x[r * wd + q])) at = r * wd + q;
    }
  }
  return at;
}

// Calls fn(grad plane, input plane, grad_input plane) for every plane, split
// over the pool; each grad_input plane is cleared first.
template <typename T, typename Fn>
void ForPlanes(const StridedView& grad, const StridedView& input,
               const StridedView& gi, int64_t work, Fn fn) {
  const int64_t planes = gi.sizes[0] * gi.sizes[1],
                hw = gi.sizes[2] * gi.sizes[3],
                ohw = grad.sizes[2] * grad.sizes[3];
  const T* gp = grad.ptr<const T>();
  const T* xp = input.data ? input.ptr<const T>() : nullptr;
  T* op = gi.ptr<T>();
  ParallelFor(planes, hw + work, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      T* o = op + p * hw;
      std::fill(o, o + hw, T{0});
      fn(gp + p * ohw, xp ? xp + p * hw : nullptr, o);
    }
  });
}

}  // namespace

int64_t ConvGradWorkspace(const ConvGeometry& g) {
  return std::max<int64_t>(
      1, BlockImages(g, kWorkspaceBudget) * (Rows(g) + g.o) * Cols(g));
}

absl::Status Conv2dBackwardWeight(const StridedView& grad,
                                  const StridedView& input,
                                  const ConvGeometry& g,
                                  const StridedView& workspace,
                                  const StridedView& grad_weight) {
  return DispatchFloat(grad.dtype, "conv2d_backward_weight", [&](auto tag) {
    using T = decltype(tag);
    WeightGrad(grad.ptr<const T>(), input.ptr<const T>(), g, workspace.ptr<T>(),
               BlockImages(g, workspace.numel()), grad_weight.ptr<T>());
  });
}

absl::Status Conv2dBackwardInput(const StridedView& grad,
                                 const StridedView& weight,
                                 const ConvGeometry& g,
                                 const StridedView& workspace,
                                 const StridedView& grad_input) {
  return DispatchFloat(grad.dtype, "conv2d_backward_input", [&](auto tag) {
    using T = decltype(tag);
    InputGrad(grad.ptr<const T>(), weight.ptr<const T>(), g, workspace.ptr<T>(),
              BlockImages(g, workspace.numel()), grad_input.ptr<T>());
  });
}

absl::Status MaxPool2dBackward(const StridedView& grad,
                               const StridedView& input, const Window2d& w,
                               const StridedView& grad_input) {
  const int64_t h = grad_input.sizes[2], wd = grad_input.sizes[3];
  return DispatchFloat(grad.dtype, "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    // Per output row: the maxima as in the forward, then the index of the
    // first maximal tap (kernel rows in reverse); NaN maxima (rare) take
    // the last NaN, scalar.
    auto plane = [&](const T* g, const T* x, T* gi) {
      std::vector<T> best(w.ow);
      std::vector<int64_t> arg(w.ow);
      for (int64_t i = 0; i < w.oh; ++i) {
        const int64_t r0 = i * w.sh - w.ph;
        int64_t lo, hi;
        internal::Taps(r0, w.dh, w.kh, h, &lo, &hi);
        std::fill(best.begin(), best.end(),
                  -std::numeric_limits<T>::infinity());
        std::fill(arg.begin(), arg.end(), int64_t{-1});
        for (int64_t a = lo; a < hi; ++a) {
          internal::MaxPoolRow(x + (r0 + a * w.dh) * wd, wd, w, best.data());
        }
        for (int64_t a = hi - 1; a >= lo; --a) {
          const int64_t r = r0 + a * w.dh;
          internal::MaxPoolArgRow(x + r * wd, wd, w, r * wd, best.data(),
                                  arg.data());
        }
        for (int64_t j = 0; j < w.ow; ++j) {
          if (std::isnan(best[j])) arg[j] = LastNaN(x, wd, w, lo, hi, r0, j);
          if (arg[j] >= 0) gi[arg[j]] += g[i * w.ow + j];
        }
      }
    };
    ForPlanes<T>(grad, input, grad_input, w.oh * w.ow * w.kh * w.kw, plane);
  });
}

absl::Status AvgPool2dBackward(const StridedView& grad, const Window2d& w,
                               bool count_include_pad,
                               const StridedView& grad_input) {
  const int64_t h = grad_input.sizes[2], wd = grad_input.sizes[3];
  return DispatchFloat(grad.dtype, "avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    auto plane = [&](const T* g, const T*, T* gi) {
      for (int64_t i = 0; i < w.oh; ++i) {
        const int64_t h0 = i * w.sh - w.ph, h1 = std::min(h0 + w.kh, h + w.ph);
        const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h1, h);
        for (int64_t j = 0; j < w.ow; ++j) {
          const int64_t w0 = j * w.sw - w.pw,
                        w1 = std::min(w0 + w.kw, wd + w.pw);
          const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w1, wd);
          const int64_t count =
              count_include_pad ? (h1 - h0) * (w1 - w0) : (he - hs) * (we - ws);
          if (count <= 0) continue;
          const T share = g[i * w.ow + j] / static_cast<T>(count);
          for (int64_t r = hs; r < he; ++r) {
            for (int64_t q = ws; q < we; ++q) gi[r * wd + q] += share;
          }
        }
      }
    };
    ForPlanes<T>(grad, StridedView{}, grad_input, w.oh * w.ow * w.kh * w.kw,
                 plane);
  });
}

absl::Status AdaptiveAvgPool2dBackward(const StridedView& grad,
                                       const StridedView& grad_input) {
  const int64_t h = grad_input.sizes[2], wd = grad_input.sizes[3],
                oh = grad.sizes[2], ow = grad.sizes[3];
  return DispatchFloat(
      grad.dtype, "adaptive_avg_pool2d_backward", [&](auto tag) {
        using T = decltype(tag);
        auto plane = [&](const T* g, const T*, T* gi) {
          for (int64_t i = 0; i < oh; ++i) {
            const int64_t h0 = i * h / oh, h1 = ((i + 1) * h + oh - 1) / oh;
            for (int64_t j = 0; j < ow; ++j) {
              const int64_t w0 = j * wd / ow, w1 = ((j + 1) * wd + ow - 1) / ow;
              const T share =
                  g[i * ow + j] / static_cast<T>((h1 - h0) * (w1 - w0));
              for (int64_t r = h0; r < h1; ++r) {
                for (int64_t q = w0; q < w1; ++q) gi[r * wd + q] += share;
              }
            }
          }
        };
        ForPlanes<T>(grad, StridedView{}, grad_input, h * wd, plane);
      });
}

}  // namespace cpu
}  // namespace tensord

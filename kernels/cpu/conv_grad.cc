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

// Scratch across the pool's threads, in elements (64 MiB of float32); past
// it the images go one at a time and the pool splits each image's work.
constexpr int64_t kWorkspaceBudget = int64_t{1} << 24;

int64_t Rows(const ConvGeometry& g) { return g.c * g.win.kh * g.win.kw; }
int64_t Cols(const ConvGeometry& g) { return g.win.oh * g.win.ow; }

// One thread's scratch: an image's columns [Rows, L], then a partial weight
// gradient [o, Rows / groups].
int64_t SlotElems(const ConvGeometry& g) {
  return std::max<int64_t>(
      1, Rows(g) * Cols(g) + g.o * (Rows(g) / std::max<int64_t>(g.groups, 1)));
}

// Scratch slots a workspace of `elems` gives: one per thread, or 1.
int64_t Slots(const ConvGeometry& g, int64_t elems) {
  return elems / SlotElems(g) >= NumThreads() ? NumThreads() : 1;
}

// one(image, slot scratch) for every image: with a slot per thread the
// images are split over the pool (each image's im2col, GEMMs and col2im then
// stay on its thread); with one slot they go in turn and each image's work
// is split instead.
template <typename T, typename Fn>
void ForImages(const ConvGeometry& g, int64_t slots, T* ws, int64_t work,
               Fn one) {
  if (slots == 1) {
    for (int64_t n = 0; n < g.n; ++n) one(n, ws);
    return;
  }
  ParallelForSlots(g.n, work, [&](int slot, int64_t first, int64_t last) {
    for (int64_t n = first; n < last; ++n) one(n, ws + slot * SlotElems(g));
  });
}

// Each image's columns, then per group its grad [og, L] times the columns
// [kg, L] transposed, added into the slot's partial gradient; the partials
// are summed in slot order.
template <typename T>
void WeightGrad(const T* grad, const T* input, const ConvGeometry& g, T* ws,
                int64_t slots, T* gw) {
  const int64_t og = g.o / g.groups, kg = Rows(g) / g.groups, l = Cols(g);
  const int64_t cols = Rows(g) * l, per = SlotElems(g), size = g.o * kg;
  for (int64_t s = 0; s < slots; ++s) {
    std::fill(ws + s * per + cols, ws + s * per + cols + size, T{0});
  }
  if (og > 0 && kg > 0 && l > 0) {
    ForImages(g, slots, ws, size * l, [&](int64_t n, T* slot) {
      const T* image = input + n * g.c * g.h * g.w;
      ParallelFor(Rows(g), l, [&](int64_t first, int64_t last) {
        for (int64_t row = first; row < last; ++row) {
          internal::Im2ColRow(image, g.h, g.w, g.win, row, slot + row * l);
        }
      });
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        Gemm<T>(false, true, og, kg, l, grad + (n * g.o + grp * og) * l, l,
                slot + grp * kg * l, l, T{1}, slot + cols + grp * og * kg, kg);
      }
    });
  }
  std::copy(ws + cols, ws + cols + size, gw);
  for (int64_t s = 1; s < slots; ++s) {
    const T* part = ws + s * per + cols;
    for (int64_t i = 0; i < size; ++i) gw[i] += part[i];
  }
}

// Per image and group: the weight [og, kg] transposed times its grad
// [og, L] into the columns, scattered back into the image by col2im.
template <typename T>
void InputGrad(const T* grad, const T* weight, const ConvGeometry& g, T* ws,
               int64_t slots, T* gi) {
  const int64_t og = g.o / g.groups, kg = Rows(g) / g.groups, l = Cols(g);
  const int64_t plane = g.h * g.w;
  if (og == 0 || kg == 0 || l == 0) {
    std::fill(gi, gi + g.n * g.c * plane, T{0});
    return;
  }
  ForImages(g, slots, ws, Rows(g) * l * og, [&](int64_t n, T* col) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      Gemm<T>(true, false, kg, l, og, weight + grp * og * kg, kg,
              grad + (n * g.o + grp * og) * l, l, T{0}, col + grp * kg * l, l);
    }
    ParallelFor(g.c, Rows(g) / g.c * l + plane,
                [&](int64_t first, int64_t last) {
                  for (int64_t c = first; c < last; ++c) {
                    T* dst = gi + (n * g.c + c) * plane;
                    std::fill(dst, dst + plane, T{0});
                    internal::Col2ImPlane(col, l, g.h, g.w, g.win, c, dst);
                  }
                });
  });
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

// Calls fn(plane index, grad plane, input plane, grad_input plane) for
// every plane, split over the pool; each grad_input plane is cleared first.
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
      fn(p, gp + p * ohw, xp ? xp + p * hw : nullptr, o);
    }
  });
}

}  // namespace

int64_t ConvGradWorkspace(const ConvGeometry& g) {
  const int64_t per = SlotElems(g);
  return per * NumThreads() <= kWorkspaceBudget ? per * NumThreads() : per;
}

absl::Status Conv2dBackwardWeight(const StridedView& grad,
                                  const StridedView& input,
                                  const ConvGeometry& g,
                                  const StridedView& workspace,
                                  const StridedView& grad_weight) {
  if (workspace.numel() < SlotElems(g)) {
    return absl::InternalError("conv2d_backward_weight: workspace too small");
  }
  return DispatchFloat(grad.dtype, "conv2d_backward_weight", [&](auto tag) {
    using T = decltype(tag);
    WeightGrad(grad.ptr<const T>(), input.ptr<const T>(), g, workspace.ptr<T>(),
               Slots(g, workspace.numel()), grad_weight.ptr<T>());
  });
}

absl::Status Conv2dBackwardInput(const StridedView& grad,
                                 const StridedView& weight,
                                 const ConvGeometry& g,
                                 const StridedView& workspace,
                                 const StridedView& grad_input) {
  if (workspace.numel() < SlotElems(g)) {
    return absl::InternalError("conv2d_backward_input: workspace too small");
  }
  return DispatchFloat(grad.dtype, "conv2d_backward_input", [&](auto tag) {
    using T = decltype(tag);
    InputGrad(grad.ptr<const T>(), weight.ptr<const T>(), g, workspace.ptr<T>(),
              Slots(g, workspace.numel()), grad_input.ptr<T>());
  });
}

absl::Status MaxPool2dBackward(const StridedView& grad,
                               const StridedView& input,
                               const StridedView& output, const Window2d& w,
                               const StridedView& grad_input) {
  const int64_t h = grad_input.sizes[2], wd = grad_input.sizes[3];
  return DispatchFloat(grad.dtype, "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* maxima = output.data ? output.ptr<const T>() : nullptr;
    // Per output row: the maxima (the forward's output, else recomputed as
    // in the forward), then the index of the first maximal tap (kernel rows
    // in reverse); NaN maxima (rare) take the last NaN, scalar.
    auto plane = [&](int64_t p, const T* g, const T* x, T* gi) {
      std::vector<T> best(maxima ? 0 : w.ow);
      std::vector<int64_t> arg(w.ow);
      for (int64_t i = 0; i < w.oh; ++i) {
        const int64_t r0 = i * w.sh - w.ph;
        int64_t lo, hi;
        internal::Taps(r0, w.dh, w.kh, h, &lo, &hi);
        const T* m = maxima ? maxima + (p * w.oh + i) * w.ow : best.data();
        if (!maxima) {
          std::fill(best.begin(), best.end(),
                    -std::numeric_limits<T>::infinity());
          for (int64_t a = lo; a < hi; ++a) {
            internal::MaxPoolRow(x + (r0 + a * w.dh) * wd, wd, w, best.data());
          }
        }
        std::fill(arg.begin(), arg.end(), int64_t{-1});
        for (int64_t a = hi - 1; a >= lo; --a) {
          const int64_t r = r0 + a * w.dh;
          internal::MaxPoolArgRow(x + r * wd, wd, w, r * wd, m, arg.data());
        }
        for (int64_t j = 0; j < w.ow; ++j) {
          if (std::isnan(m[j])) arg[j] = LastNaN(x, wd, w, lo, hi, r0, j);
          if (arg[j] >= 0) gi[arg[j]] += g[i * w.ow + j];
        }
      }
    };
    ForPlanes<T>(grad, input, grad_input, w.oh * w.ow * w.kh * w.kw, plane);
  });
}

absl::Status AvgPool2dBackward(const StridedView& grad, const Window2d& w,
                               bool count_include_pad, int64_t divisor_override,
                               const StridedView& grad_input) {
  const int64_t h = grad_input.sizes[2], wd = grad_input.sizes[3];
  return DispatchFloat(grad.dtype, "avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    auto plane = [&](int64_t, const T* g, const T*, T* gi) {
      for (int64_t i = 0; i < w.oh; ++i) {
        const int64_t h0 = i * w.sh - w.ph, h1 = std::min(h0 + w.kh, h + w.ph);
        const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h1, h);
        for (int64_t j = 0; j < w.ow; ++j) {
          const int64_t w0 = j * w.sw - w.pw,
                        w1 = std::min(w0 + w.kw, wd + w.pw);
          const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w1, wd);
          const int64_t count = divisor_override != 0 ? divisor_override
                                : count_include_pad   ? (h1 - h0) * (w1 - w0)
                                                      : (he - hs) * (we - ws);
          if (count == 0) continue;
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
        auto plane = [&](int64_t, const T* g, const T*, T* gi) {
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

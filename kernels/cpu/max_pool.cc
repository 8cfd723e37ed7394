#include "kernels/cpu/max_pool.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

// Output row i of one image: the maxima into y and their indices into arg
// (ow each). The taps go kernel row by kernel row, and within a row column
// by column over every output at once; for any one output that is still its
// window's scan order (Note [Max pool indices]). Branch-free (which tap wins
// is data-dependent) with indices I as wide as T, so the column loops
// vectorise: int32 for float32 (the caller widens them), int64 for float64.
template <typename T, typename I>
void PoolRow(const T* x, int64_t h, int64_t wd, const Window2d& w, int64_t i,
             T* y, I* arg) {
  const int64_t r0 = i * w.sh - w.ph;
  const int64_t first_row = FirstTapAtOrAfterZero(r0, w.dh);
  for (int64_t j = 0; j < w.ow; ++j) {
    y[j] = -std::numeric_limits<T>::infinity();
    arg[j] = static_cast<I>(first_row * wd +
                            FirstTapAtOrAfterZero(j * w.sw - w.pw, w.dw));
  }
  int64_t lo, hi;
  internal::Taps(r0, w.dh, w.kh, h, &lo, &hi);
  for (int64_t a = lo; a < hi; ++a) {
    const int64_t r = r0 + a * w.dh;
    const T* src = x + r * wd;
    for (int64_t k = 0; k < w.kw; ++k) {
      const int64_t off = k * w.dw - w.pw;
      int64_t jlo, jhi;
      internal::Taps(off, w.sw, w.ow, wd, &jlo, &jhi);
      const I base = static_cast<I>(r * wd + off);
      const I step = static_cast<I>(w.sw);
      for (int64_t j = jlo; j < jhi; ++j) {
        const T v = src[j * w.sw + off], best = y[j];
        const bool take = (v > best) | (v != v);
        y[j] = take ? v : best;
        arg[j] =
            take ? static_cast<I>(base + static_cast<I>(j) * step) : arg[j];
      }
    }
  }
}

// Whether every index of a plane fits int32: a window's starting row and
// column stepped by the dilation (Note [Max pool indices]) stay below
// max(h, dh) and max(wd, dw). In double: the attributes may be huge.
bool IndicesFitInt32(int64_t h, int64_t wd, const Window2d& w) {
  const double rows = static_cast<double>(std::max(h, w.dh));
  const double cols = static_cast<double>(std::max(wd, w.dw));
  return rows * static_cast<double>(wd) + cols <
         static_cast<double>(std::numeric_limits<int32_t>::max());
}

}  // namespace

absl::Status MaxPool2dWithIndices(const StridedView& in, const Window2d& w,
                                  const StridedView& out,
                                  const StridedView& indices) {
  const int64_t planes = in.sizes[0] * in.sizes[1], h = in.sizes[2],
                wd = in.sizes[3], ohw = w.oh * w.ow;
  return DispatchFloat(in.dtype, "max_pool2d_with_indices", [&](auto tag) {
    using T = decltype(tag);
    const bool narrow = sizeof(T) == 4 && IndicesFitInt32(h, wd, w);
    ParallelFor(planes, ohw * w.kh * w.kw, [&](int64_t b, int64_t e) {
      std::vector<int32_t> row(narrow ? w.ow : 0);
      for (int64_t p = b; p < e; ++p) {
        const T* x = in.ptr<const T>() + p * h * wd;
        T* y = out.ptr<T>() + p * ohw;
        int64_t* arg = indices.ptr<int64_t>() + p * ohw;
        for (int64_t i = 0; i < w.oh; ++i) {
          if (!narrow) {
            PoolRow(x, h, wd, w, i, y + i * w.ow, arg + i * w.ow);
            continue;
          }
          PoolRow(x, h, wd, w, i, y + i * w.ow, row.data());
          std::copy(row.begin(), row.end(), arg + i * w.ow);
        }
      }
    });
  });
}

absl::Status AdaptiveMaxPool3d(const StridedView& in, const StridedView& out,
                               const StridedView& indices) {
  const int64_t planes = in.sizes[0], d = in.sizes[1], h = in.sizes[2],
                wd = in.sizes[3];
  const int64_t od = out.sizes[1], oh = out.sizes[2], ow = out.sizes[3];
  const int64_t vol = d * h * wd, ovol = od * oh * ow;
  return DispatchFloat(in.dtype, "adaptive_max_pool", [&](auto tag) {
    using T = decltype(tag);
    // Each output reads its window: about max(vol, ovol) taps per plane
    // (windows overlap by at most one tap per dim).
    ParallelFor(planes, std::max(vol, ovol), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* x = in.ptr<const T>() + p * vol;
        T* y = out.ptr<T>() + p * ovol;
        int64_t* arg = indices.ptr<int64_t>() + p * ovol;
        for (int64_t t = 0; t < od; ++t) {
          const int64_t t0 = AdaptiveStart(t, d, od),
                        t1 = AdaptiveEnd(t, d, od);
          for (int64_t i = 0; i < oh; ++i) {
            const int64_t r0 = AdaptiveStart(i, h, oh),
                          r1 = AdaptiveEnd(i, h, oh);
            for (int64_t j = 0; j < ow; ++j) {
              const int64_t c0 = AdaptiveStart(j, wd, ow),
                            c1 = AdaptiveEnd(j, wd, ow);
              T best = -std::numeric_limits<T>::infinity();
              int64_t at = (t0 * h + r0) * wd + c0;
              for (int64_t u = t0; u < t1; ++u) {
                for (int64_t r = r0; r < r1; ++r) {
                  const int64_t row = (u * h + r) * wd;
                  for (int64_t c = c0; c < c1; ++c) {
                    const T v = x[row + c];
                    if (v > best || v != v) best = v, at = row + c;
                  }
                }
              }
              *y++ = best;
              *arg++ = at;
            }
          }
        }
      }
    });
  });
}

absl::Status MaxPool2dWithIndicesBackward(const StridedView& grad,
                                          const StridedView& indices,
                                          const StridedView& grad_input) {
  const int64_t planes = grad_input.sizes[0] * grad_input.sizes[1],
                hw = grad_input.sizes[2] * grad_input.sizes[3],
                ohw = grad.sizes[2] * grad.sizes[3];
  return DispatchFloat(
      grad.dtype, "max_pool2d_with_indices_backward", [&](auto tag) {
        using T = decltype(tag);
        ParallelFor(planes, hw + ohw, [&](int64_t b, int64_t e) {
          for (int64_t p = b; p < e; ++p) {
            T* gi = grad_input.ptr<T>() + p * hw;
            const T* g = grad.ptr<const T>() + p * ohw;
            const int64_t* at = indices.ptr<const int64_t>() + p * ohw;
            std::fill(gi, gi + hw, T{0});
            for (int64_t o = 0; o < ohw; ++o) {
              if (at[o] >= 0 && at[o] < hw) gi[at[o]] += g[o];
            }
          }
        });
      });
}

}  // namespace cpu
}  // namespace tensord

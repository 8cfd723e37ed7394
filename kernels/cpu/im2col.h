// Serial im2col / col2im rows shared by conv2d (nn.cc) and its gradients
// (conv_grad.cc). Internal to kernels/cpu.
//
// Column row `row` = (c * kh + a) * kw + k holds, for every output position
// (i, j), the input pixel (i * sh - ph + a * dh, j * sw - pw + k * dw) of
// channel c, or 0 where that pixel is padding.
#ifndef TENSORD_KERNELS_CPU_IM2COL_H_
#define TENSORD_KERNELS_CPU_IM2COL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/nn.h"

namespace tensord {
namespace cpu {
namespace internal {

// The in-bounds output columns [lo, hi) of kernel column k when sw == 1
// (q = j + off stays within [0, wd)).
inline void ColRange(int64_t off, int64_t ow, int64_t wd, int64_t* lo,
                     int64_t* hi) {
  *lo = std::min<int64_t>(std::max<int64_t>(0, -off), ow);
  *hi = std::max<int64_t>(*lo, std::min<int64_t>(ow, wd - off));
}

// [*lo, *hi): the taps t in [0, taps) with 0 <= start + t * step < size.
inline void Taps(int64_t start, int64_t step, int64_t taps, int64_t size,
                 int64_t* lo, int64_t* hi) {
  *lo = start >= 0 ? 0 : std::min(taps, (-start + step - 1) / step);
  *hi = start >= size ? 0 : std::min(taps, (size - 1 - start) / step + 1);
  *hi = std::max(*hi, *lo);
}

// Max pooling of one output row: for every output column j of `y` (ow
// long), the maximum over kernel row `src` (input row, wd long) taps
// j * sw - pw + k * dw, k in [0, kw); NaN wins.
template <typename T>
void MaxPoolRow(const T* src, int64_t wd, const Window2d& w, T* y) {
  for (int64_t k = 0; k < w.kw; ++k) {
    const int64_t off = k * w.dw - w.pw;
    int64_t lo, hi;
    Taps(off, w.sw, w.ow, wd, &lo, &hi);
    for (int64_t j = lo; j < hi; ++j) {
      const T v = src[j * w.sw + off];
      y[j] = (v > y[j] || v != v) ? v : y[j];
    }
  }
}

// With the row maxima `m` known: sets arg[j] to flat index `base` + column
// of this kernel row's last tap equal to m[j]. Called on the kernel rows in
// reverse order it leaves the first maximal tap (PyTorch's pick for a
// non-NaN maximum). Branch-free: which tap wins is data-dependent.
template <typename T>
void MaxPoolArgRow(const T* src, int64_t wd, const Window2d& w, int64_t base,
                   const T* m, int64_t* arg) {
  for (int64_t k = w.kw - 1; k >= 0; --k) {
    const int64_t off = k * w.dw - w.pw;
    int64_t lo, hi;
    Taps(off, w.sw, w.ow, wd, &lo, &hi);
    for (int64_t j = lo; j < hi; ++j) {
      const int64_t hit = src[j * w.sw + off] == m[j];
      arg[j] += hit * (base + j * w.sw + off - arg[j]);
    }
  }
}

// Writes column row `row` (oh * ow values at `dst`) from one image's
// channels `image` ([C, h, wd]).
template <typename T>
void Im2ColRow(const T* image, int64_t h, int64_t wd, const Window2d& w,
               int64_t row, T* dst) {
  const int64_t c = row / (w.kh * w.kw), a = (row / w.kw) % w.kh,
                k = row % w.kw;
  const T* x = image + c * h * wd;
  const int64_t off = k * w.dw - w.pw;
  int64_t lo = 0, hi = 0;
  if (w.sw == 1) ColRange(off, w.ow, wd, &lo, &hi);
  for (int64_t i = 0; i < w.oh; ++i) {
    const int64_t r = i * w.sh - w.ph + a * w.dh;
    T* d = dst + i * w.ow;
    if (r < 0 || r >= h) {
      std::fill(d, d + w.ow, T{0});
      continue;
    }
    const T* src = x + r * wd;
    if (w.sw == 1) {
      std::fill(d, d + lo, T{0});
      if (hi > lo) std::memcpy(d + lo, src + lo + off, (hi - lo) * sizeof(T));
      std::fill(d + hi, d + w.ow, T{0});
    } else {
      for (int64_t j = 0; j < w.ow; ++j) {
        const int64_t q = j * w.sw + off;
        d[j] = (q >= 0 && q < wd) ? src[q] : T{0};
      }
    }
  }
}

// The adjoint of Im2ColRow for one channel: adds every row of channel c
// (rows c*kh*kw .. (c+1)*kh*kw - 1, `ld` elements apart, starting at `col`)
// into `plane` ([h, wd], not cleared here).
template <typename T>
void Col2ImPlane(const T* col, int64_t ld, int64_t h, int64_t wd,
                 const Window2d& w, int64_t c, T* plane) {
  for (int64_t a = 0; a < w.kh; ++a) {
    for (int64_t k = 0; k < w.kw; ++k) {
      const T* src = col + ((c * w.kh + a) * w.kw + k) * ld;
      const int64_t off = k * w.dw - w.pw;
      int64_t lo = 0, hi = 0;
      if (w.sw == 1) ColRange(off, w.ow, wd, &lo, &hi);
      for (int64_t i = 0; i < w.oh; ++i) {
        const int64_t r = i * w.sh - w.ph + a * w.dh;
        if (r < 0 || r >= h) continue;
        T* dst = plane + r * wd;
        const T* s = src + i * w.ow;
        if (w.sw == 1) {
          for (int64_t j = lo; j < hi; ++j) dst[j + off] += s[j];
        } else {
          for (int64_t j = 0; j < w.ow; ++j) {
            const int64_t q = j * w.sw + off;
            if (q >= 0 && q < wd) dst[q] += s[j];
          }
        }
      }
    }
  }
}

}  // namespace internal
}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_IM2COL_H_

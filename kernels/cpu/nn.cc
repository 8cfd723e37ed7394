#include "kernels/cpu/nn.h"

#include <algorithm>
#include <limits>
#include <type_traits>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {

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
                       bool count_include_pad, int64_t divisor_override,
                       const StridedView& out) {
  const int64_t planes = in.sizes[0] * in.sizes[1], h = in.sizes[2],
                wd = in.sizes[3];
  auto pool = [&](auto tag) {
    using T = decltype(tag);
    // Floats sum in double; int64 in int64 (wrapping) and divides with C's
    // truncation, as PyTorch's CPU kernel.
    using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
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
            Acc s = 0;
            for (int64_t r = r0; r < r1; ++r) {
              for (int64_t q = c0; q < c1; ++q) s += x[r * wd + q];
            }
            const int64_t count = divisor_override != 0 ? divisor_override
                                  : count_include_pad   ? padded
                                                        : (r1 - r0) * (c1 - c0);
            y[i * w.ow + j] = static_cast<T>(s / static_cast<Acc>(count));
          }
        }
      }
    });
  };
  if (in.dtype == DType::kInt64) {
    pool(int64_t{});
    return absl::OkStatus();
  }
  return DispatchFloat(in.dtype, "avg_pool2d", pool);
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

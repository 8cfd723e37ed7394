#include "kernels/cpu/avg_pool3d.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

struct Box {
  BoxRange r[3];
  int64_t divisor;  // 0: nothing inside the input
};

Box BoxOf(const AvgWindow3d& w, const int64_t o[3], const int64_t in[3],
          const int64_t out[3]) {
  Box b;
  int64_t padded = 1, inside = 1;
  for (int d = 0; d < 3; ++d) {
    b.r[d] = AvgRange(w, d, o[d], in[d], out[d]);
    padded *= b.r[d].padded;
    inside *= std::max<int64_t>(b.r[d].hi - b.r[d].lo, 0);
  }
  b.divisor = inside == 0               ? 0
              : w.divisor_override != 0 ? w.divisor_override
              : w.count_include_pad     ? padded
                                        : inside;
  return b;
}

// Calls fn(output's flat index, its box) for each output of a plane, in
// output order.
template <typename Fn>
void ForBoxes(const AvgWindow3d& w, const int64_t in[3], const int64_t out[3],
              Fn&& fn) {
  int64_t o[3];
  int64_t k = 0;
  for (o[0] = 0; o[0] < out[0]; ++o[0]) {
    for (o[1] = 0; o[1] < out[1]; ++o[1]) {
      for (o[2] = 0; o[2] < out[2]; ++o[2]) fn(k++, BoxOf(w, o, in, out));
    }
  }
}

}  // namespace

absl::Status AvgPool3d(const StridedView& in, const AvgWindow3d& w,
                       const StridedView& out) {
  const int64_t planes = in.sizes[0];
  const int64_t isz[3] = {in.sizes[1], in.sizes[2], in.sizes[3]};
  const int64_t osz[3] = {out.sizes[1], out.sizes[2], out.sizes[3]};
  const int64_t vol = isz[0] * isz[1] * isz[2], ovol = osz[0] * osz[1] * osz[2];
  auto pool = [&](auto tag) {
    using T = decltype(tag);
    // Floats sum in double; int64 in int64 (wrapping) and divides with C's
    // truncation, as PyTorch's CPU kernel.
    using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
    ParallelFor(planes, std::max(vol, ovol), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* x = in.ptr<const T>() + p * vol;
        T* y = out.ptr<T>() + p * ovol;
        ForBoxes(w, isz, osz, [&](int64_t k, const Box& box) {
          Acc s = 0;
          for (int64_t u = box.r[0].lo; u < box.r[0].hi; ++u) {
            for (int64_t r = box.r[1].lo; r < box.r[1].hi; ++r) {
              const T* row = x + (u * isz[1] + r) * isz[2];
              for (int64_t c = box.r[2].lo; c < box.r[2].hi; ++c) s += row[c];
            }
          }
          y[k] = box.divisor == 0
                     ? T{0}
                     : static_cast<T>(s / static_cast<Acc>(box.divisor));
        });
      }
    });
  };
  if (in.dtype == DType::kInt64 && !w.adaptive) {
    pool(int64_t{});
    return absl::OkStatus();
  }
  return DispatchFloat(in.dtype,
                       w.adaptive ? "adaptive_avg_pool3d" : "avg_pool3d", pool);
}

absl::Status AvgPool3dBackward(const StridedView& grad, const AvgWindow3d& w,
                               const StridedView& grad_input) {
  const int64_t planes = grad_input.sizes[0];
  const int64_t isz[3] = {grad_input.sizes[1], grad_input.sizes[2],
                          grad_input.sizes[3]};
  const int64_t osz[3] = {grad.sizes[1], grad.sizes[2], grad.sizes[3]};
  const int64_t vol = isz[0] * isz[1] * isz[2], ovol = osz[0] * osz[1] * osz[2];
  return DispatchFloat(
      grad.dtype,
      w.adaptive ? "adaptive_avg_pool3d_backward" : "avg_pool3d_backward",
      [&](auto tag) {
        using T = decltype(tag);
        ParallelFor(planes, std::max(vol, ovol), [&](int64_t b, int64_t e) {
          for (int64_t p = b; p < e; ++p) {
            const T* g = grad.ptr<const T>() + p * ovol;
            T* gi = grad_input.ptr<T>() + p * vol;
            std::fill(gi, gi + vol, T{0});
            ForBoxes(w, isz, osz, [&](int64_t k, const Box& box) {
              if (box.divisor == 0) return;
              const T share = g[k] / static_cast<T>(box.divisor);
              for (int64_t u = box.r[0].lo; u < box.r[0].hi; ++u) {
                for (int64_t r = box.r[1].lo; r < box.r[1].hi; ++r) {
                  T* row = gi + (u * isz[1] + r) * isz[2];
                  for (int64_t c = box.r[2].lo; c < box.r[2].hi; ++c) {
                    row[c] += share;
                  }
                }
              }
            });
          }
        });
      });
}

}  // namespace cpu
}  // namespace tensord

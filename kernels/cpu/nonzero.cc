#include "kernels/cpu/nonzero.h"

#include <algorithm>

#include "kernels/cpu/dispatch.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cpu {
namespace {

// NaN compares unequal to zero: it counts as nonzero, as in PyTorch.
template <typename T>
bool IsNonzero(T v) {
  return v != T(0);
}
bool IsNonzero(Half v) { return static_cast<float>(v) != 0.0f; }
bool IsNonzero(BFloat16 v) { return static_cast<float>(v) != 0.0f; }

}  // namespace

absl::Status NonzeroStatic(const StridedView& in, int64_t fill_value,
                           const StridedView& out) {
  const int nd = in.ndim;
  const int64_t rows = out.sizes[0];
  const int64_t n = in.numel();
  int64_t* o = out.ptr<int64_t>();
  int64_t found = 0;
  TD_RETURN_IF_ERROR(DispatchWithHalf(in.dtype, "nonzero_static", [&](auto t) {
    using T = decltype(t);
    const T* x = in.ptr<T>();
    // A row-major walk that keeps the current coordinate: no division per
    // element, only per nonzero one written.
    int64_t coord[kMaxDims] = {};
    for (int64_t i = 0; i < n && found < rows; ++i) {
      if (IsNonzero(x[i])) {
        std::copy(coord, coord + nd, o + found * nd);
        ++found;
      }
      for (int d = nd - 1; d >= 0; --d) {
        if (++coord[d] < in.sizes[d]) break;
        coord[d] = 0;
      }
    }
  }));
  std::fill(o + found * nd, o + rows * nd, fill_value);
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace tensord

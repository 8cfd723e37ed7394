#include "kernels/cpu/conv.h"

#include <algorithm>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

// Column scratch budget across threads, in elements (64 MiB of float32).
constexpr int64_t kColumnBudget = int64_t{1} << 24;

bool ReadsImageDirectly(const Window2d& w) {
  return w.kh == 1 && w.kw == 1 && w.sh == 1 && w.sw == 1 && w.ph == 0 &&
         w.pw == 0;
}

// Elements of one image's (one group's) columns.
int64_t ColumnElems(const ConvGeometry& g) {
  return g.c / std::max<int64_t>(g.groups, 1) * g.win.kh * g.win.kw * g.win.oh *
         g.win.ow;
}

template <typename T>
void Forward(const T* x, const T* weight, const ConvGeometry& g, T* ws,
             int64_t slots, T* y) {
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  const int64_t k = cg * g.win.kh * g.win.kw, l = g.win.oh * g.win.ow;
  const bool direct = ReadsImageDirectly(g.win);
  // One image and group of the output at a time; columns at `col`. Its
  // im2col rows and GEMM split over the pool unless already on it.
  auto one = [&](int64_t item, T* col) {
    const int64_t n = item / g.groups, grp = item % g.groups;
    const T* image = x + (n * g.c + grp * cg) * g.h * g.w;
    if (!direct) {
      ParallelFor(k, l, [&](int64_t first, int64_t last) {
        for (int64_t row = first; row < last; ++row) {
          internal::Im2ColRow(image, g.h, g.w, g.win, row, col + row * l);
        }
      });
    }
    Gemm<T>(false, false, og, l, k, weight + grp * og * k, k,
            direct ? image : col, l, T{0}, y + (n * g.o + grp * og) * l, l);
  };
  const int64_t items = g.n * g.groups;
  if (slots < NumThreads()) {
    for (int64_t item = 0; item < items; ++item) one(item, ws);
    return;
  }
  ParallelForSlots(items, og * k * l,
                   [&](int slot, int64_t first, int64_t last) {
                     for (int64_t item = first; item < last; ++item) {
                       one(item, direct ? ws : ws + slot * k * l);
                     }
                   });
}

}  // namespace

int64_t ConvWorkspace(const ConvGeometry& g) {
  if (ReadsImageDirectly(g.win)) return 1;
  const int64_t per = std::max<int64_t>(ColumnElems(g), 1);
  const int64_t slots = per * NumThreads() <= kColumnBudget ? NumThreads() : 1;
  return slots * per;
}

absl::Status Conv2d(const StridedView& input, const StridedView& weight,
                    const ConvGeometry& g, const StridedView& workspace,
                    const StridedView& out) {
  if (g.n * g.o * g.win.oh * g.win.ow == 0) return absl::OkStatus();
  const bool direct = ReadsImageDirectly(g.win);
  const int64_t per = std::max<int64_t>(ColumnElems(g), 1);
  if (!direct && workspace.numel() < per) {
    return absl::InternalError("conv2d: workspace smaller than one image");
  }
  const int64_t slots = direct ? NumThreads() : workspace.numel() / per;
  return DispatchFloat(input.dtype, "conv2d", [&](auto tag) {
    using T = decltype(tag);
    const int64_t k = g.c / g.groups * g.win.kh * g.win.kw;
    if (k == 0) {  // no input channels: every output is 0
      std::fill(out.ptr<T>(), out.ptr<T>() + out.numel(), T{0});
      return;
    }
    Forward(input.ptr<const T>(), weight.ptr<const T>(), g, workspace.ptr<T>(),
            slots, out.ptr<T>());
  });
}

}  // namespace cpu
}  // namespace tensord

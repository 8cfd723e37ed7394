// conv2d's forward on contiguous float32/float64 NCHW data: per image and
// group, im2col then one GEMM (weight [og, cg*kh*kw] times the columns
// [cg*kh*kw, oh*ow]). Images are split over the intra-op pool, each thread
// with its own column scratch and a single-threaded GEMM (small per-image
// GEMMs do not pay a thread hand-off each; Note [GEMM threads] in gemm.h);
// a batch smaller than the pool splits each image's im2col and GEMM instead.
#ifndef TENSORD_KERNELS_CPU_CONV_H_
#define TENSORD_KERNELS_CPU_CONV_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/nn.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// Input [n, c, h, w], weight [o, c/groups, win.kh, win.kw], output (or
// grad) [n, o, win.oh, win.ow].
struct ConvGeometry {
  int64_t n, c, h, w, o, groups;
  Window2d win;
};

// Elements of scratch (in the data's dtype) for Conv2d: one image's columns
// per thread, fewer threads when that would pass 64 MiB of float32, and 1
// for a 1x1, stride-1, unpadded conv (its columns are the image itself).
// A smaller workspace works as long as it holds one image's columns.
int64_t ConvWorkspace(const ConvGeometry& g);

// out [n, o, oh, ow] (overwritten; no bias) from input and weight.
absl::Status Conv2d(const StridedView& input, const StridedView& weight,
                    const ConvGeometry& g, const StridedView& workspace,
                    const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_CONV_H_

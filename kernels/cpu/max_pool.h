// max_pool2d with indices, adaptive max pooling (2-d and 3-d) with indices,
// and the backward all of them share (the kernels behind the
// max_pool2d_with_indices, adaptive_max_pool{2,3}d and *_backward rows), on
// contiguous float32/float64 data.
//
// Note [Max pool indices]: PyTorch's convention, exactly. An index is the
// flat position r * W + c of the window's maximum in its (n, c) image's
// H x W plane. A window's taps are scanned row by row, column by column,
// from -inf: a tap wins when greater than the best so far or NaN, so ties go
// to the first maximum and a NaN propagates (the last NaN of the window).
// Padding never wins. A window none of whose taps wins (all -inf) keeps the
// starting index: its first row and column stepped by the dilation from the
// window's corner until they are >= 0. That position lies outside the plane
// when the window has no tap inside it (possible with dilation and padding),
// as in PyTorch; the backward skips such indices (the output is -inf there
// whatever the input).
#ifndef TENSORD_KERNELS_CPU_MAX_POOL_H_
#define TENSORD_KERNELS_CPU_MAX_POOL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/nn.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// The starting row (or column) of a window whose taps start at `start`,
// `step` apart: start, stepped forward until >= 0 (Note [Max pool indices]).
inline int64_t FirstTapAtOrAfterZero(int64_t start, int64_t step) {
  return start >= 0 ? start : start + (-start + step - 1) / step * step;
}

// in [N, C, H, W]; out [N, C, oh, ow] in in's dtype and indices (int64) of
// the same shape. Images are split over the intra-op pool.
absl::Status MaxPool2dWithIndices(const StridedView& in, const Window2d& w,
                                  const StridedView& out,
                                  const StridedView& indices);

// PyTorch's adaptive window of output i of `out` along a dim of size `in`
// (in >= 1, out >= 1): [floor(i * in / out), ceil((i + 1) * in / out)),
// never empty.
inline int64_t AdaptiveStart(int64_t i, int64_t in, int64_t out) {
  return i * in / out;
}
inline int64_t AdaptiveEnd(int64_t i, int64_t in, int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}

// Adaptive max pooling with indices: in [P, D, H, W] (P the planes, D = 1
// for a 2-d pool), out (in's dtype) and indices (int64) [P, od, oh, ow].
// Each output's window is AdaptiveStart/End along D, H and W, scanned depth
// by depth, row by row, column by column from -inf, the rule of Note [Max
// pool indices] (greater or NaN wins), as PyTorch's CPU kernels; an index is
// the flat position (d * H + r) * W + c in its plane. A window of -infs
// keeps its first position. Planes are split over the intra-op pool.
absl::Status AdaptiveMaxPool3d(const StridedView& in, const StridedView& out,
                               const StridedView& indices);

// grad and indices [N, C, oh, ow], grad_input [N, C, H, W] (overwritten):
// each grad element is added at its index of its image, in output order
// (PyTorch's CPU order, so the sums are bitwise PyTorch's). Indices outside
// [0, H * W) add nothing: a window wholly in the padding gives one (Note [Max
// pool indices]), and a client may send any; nothing outside the image is
// read or written. Only the products N * C, H * W and oh * ow matter: the
// pools with indices into larger planes (3-d, adaptive) pass [planes, 1, 1,
// plane size] views.
absl::Status MaxPool2dWithIndicesBackward(const StridedView& grad,
                                          const StridedView& indices,
                                          const StridedView& grad_input);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_MAX_POOL_H_

// segment_reduce (PyTorch's aten.segment_reduce) and its backward
// (aten._segment_reduce_backward) on contiguous float32/float64 data, as
// ATen's CPU kernels compute them (SegmentReduce.cpp): segments of `data`
// along `axis` reduced by sum, mean, max, min or prod, from the initial
// value when given (else the reduction's identity; an empty mean is NaN).
// Max and min propagate NaN. The backward splits a max's or min's gradient
// over its ties (ATen divides only the positive shares) and takes a prod's
// from the product of the other elements where an element is zero or NaN.
// Segment bounds are data: each kernel checks them before it writes
// anything and refuses bad ones with INVALID_ARGUMENT.
#ifndef TENSORD_KERNELS_CPU_SEGMENT_REDUCE_H_
#define TENSORD_KERNELS_CPU_SEGMENT_REDUCE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

enum class SegmentReduction { kSum, kMean, kMax, kMin, kProd };

struct SegmentOptions {
  SegmentReduction reduce = SegmentReduction::kSum;
  int axis = 0;
  bool offsets = false;  // bounds are offsets [..., K + 1], else lengths
  bool unsafe = false;   // lengths need not cover the whole axis
  bool has_initial = false;
  double initial = 0;
};

// data [outer..., L, inner...] (the axis of size L at options.axis),
// bounds [outer..., K] (lengths) or [outer..., K + 1] (offsets), int64, in;
// output [outer..., K, inner...] out (overwritten).
absl::Status SegmentReduce(const StridedView& data, const StridedView& bounds,
                           const SegmentOptions& options,
                           const StridedView& output);

// grad and output [outer..., K, inner...], data and bounds as above in;
// grad_data (data's shape) out (overwritten).
absl::Status SegmentReduceBackward(const StridedView& grad,
                                   const StridedView& output,
                                   const StridedView& data,
                                   const StridedView& bounds,
                                   const SegmentOptions& options,
                                   const StridedView& grad_data);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_SEGMENT_REDUCE_H_

// torch.histc's counting: equal-width bins over a range the caller chose.
#ifndef TENSORD_KERNELS_CPU_HISTOGRAM_H_
#define TENSORD_KERNELS_CPU_HISTOGRAM_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// out [bins] (in's dtype) = how many elements of `in` (C-contiguous;
// float32, float64, float16 or bfloat16) fall in each of out.sizes[0]
// equal-width bins between lo and hi (finite, lo < hi: the caller chose
// them as torch.histc does). The bins are PyTorch's (Note [Histc bins] in
// runtime/core/histogram_math.h); counts are exact integers, rounded once
// to out's dtype.
absl::Status Histc(const StridedView& in, double lo, double hi,
                   const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_HISTOGRAM_H_

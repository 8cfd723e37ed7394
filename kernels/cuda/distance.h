// CUDA cdist/pdist (forward and backward) and histc with the contracts of
// kernels/cpu/distance.h and kernels/cpu/histogram.h: C-contiguous views,
// the same norms (runtime/core/distance_math.h) and bins
// (runtime/core/histogram_math.h). One thread per output element, so the
// distances and gradients are deterministic; histc counts with atomic adds
// into `counts` (bins unsigned 64-bit words of device scratch), exact.
// Plain C++ header; asynchronous on `stream`.
#ifndef TENSORD_KERNELS_CUDA_DISTANCE_H_
#define TENSORD_KERNELS_CUDA_DISTANCE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

absl::Status Cdist(const StridedView& x1, const StridedView& x2, double p,
                   const StridedView& out, StreamHandle stream);

absl::Status CdistBackward(const StridedView& grad, const StridedView& x1,
                           const StridedView& x2, const StridedView& dist,
                           double p, const StridedView& out,
                           StreamHandle stream);

absl::Status Pdist(const StridedView& x, double p, const StridedView& out,
                   StreamHandle stream);

absl::Status PdistBackward(const StridedView& grad, const StridedView& x,
                           const StridedView& dist, double p,
                           const StridedView& out, StreamHandle stream);

absl::Status Histc(const StridedView& in, double lo, double hi,
                   const StridedView& out, uint64_t* counts,
                   StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_DISTANCE_H_

// CUDA indexing kernels with the contract of kernels/cpu/index.h (contiguous
// views, int64 indices). Index values are data on the device: kernels skip
// out-of-range entries (never touching memory outside a tensor) and record
// the first bad one in `*bad` (one device int64, -1 when all are valid),
// which the runtime reads back to report INVALID_ARGUMENT. Plain C++ header.
#ifndef TENSORD_KERNELS_CUDA_INDEX_H_
#define TENSORD_KERNELS_CUDA_INDEX_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/kernel_ops.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

// Sets *bad = -1 (device memory), ordered on `stream`.
absl::Status ResetBadIndex(int64_t* bad, StreamHandle stream);

absl::Status IndexSelect(const StridedView& in, int dim,
                         const StridedView& index, const StridedView& out,
                         int64_t* bad, StreamHandle stream);
absl::Status Gather(const StridedView& in, int dim, const StridedView& index,
                    const StridedView& out, int64_t* bad, StreamHandle stream);
// `add`: atomic accumulation (float32/float64/int32/int64 only); without it
// duplicate indices leave one of the written values, as in PyTorch.
absl::Status Scatter(const StridedView& out, int dim, const StridedView& index,
                     const StridedView& src, bool add, int64_t* bad,
                     StreamHandle stream);
// kernels/cpu/index.h's ScatterReduce (float32/float64/int32/int64):
// kSum/kMean atomic adds (float results are not deterministic), kProd/kMax/
// kMin compare-and-swap loops, NaN propagating as on the CPU. A negative
// index is bad. kMean needs `count`, out.numel() int64 of scratch (zeroed
// here); other ops take nullptr.
absl::Status ScatterReduce(const StridedView& out, int dim,
                           const StridedView& index, const StridedView& src,
                           ReduceOp op, bool include_self, int64_t* count,
                           int64_t* bad, StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_INDEX_H_

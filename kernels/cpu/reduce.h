// Reductions over a set of dimensions (sum, mean, max, min, prod).
//
// Contract: `out` has the same ndim as `in`, with size 1 on every reduced dim
// and in's size elsewhere (keepdim layout; the runtime drops dims after).
// Floating sums accumulate in double, float32 ones in float lanes first
// (Note [Float sums] in reduce_runs.h); integer sums in int64.
#ifndef TENSORD_KERNELS_CPU_REDUCE_H_
#define TENSORD_KERNELS_CPU_REDUCE_H_

#include "absl/status/status.h"
#include "runtime/core/kernel_ops.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

using ::tensord::ReduceOp;  // runtime/core/kernel_ops.h
using ::tensord::StatOp;

// `reduced[d]` says whether dim d is reduced. in and out dtypes may differ
// (e.g. int32 sum into int64); the accumulator is picked from out's dtype.
absl::Status Reduce(ReduceOp op, const StridedView& in, const bool* reduced,
                    const StridedView& out);

// `param` is the correction for kVar/kStd and p for kNorm. kArgMax/kArgMin
// write int64 flat indices over the reduced dims (first occurrence; NaN
// wins, as in PyTorch); out is floating for the others.
absl::Status ReduceStat(StatOp op, const StridedView& in, const bool* reduced,
                        double param, const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_REDUCE_H_

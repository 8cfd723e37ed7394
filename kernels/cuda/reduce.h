// CUDA reductions over a set of dimensions, with the contract of
// kernels/cpu/reduce.h (keepdim `out` layout, `reduced[d]` per dim, double
// accumulation for floats and int64 for integers, argmax/argmin as int64
// flat indices over the reduced dims with the first occurrence and NaN
// winning). Asynchronous on `stream`. Plain C++ header.
#ifndef TENSORD_KERNELS_CUDA_REDUCE_H_
#define TENSORD_KERNELS_CUDA_REDUCE_H_

#include "absl/status/status.h"
#include "runtime/core/kernel_ops.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

// Same order as cpu::ReduceOp / cpu::StatOp.
using ::tensord::ReduceOp;  // runtime/core/kernel_ops.h
using ::tensord::StatOp;

absl::Status Reduce(ReduceOp op, const StridedView& in, const bool* reduced,
                    const StridedView& out, StreamHandle stream);

// `param`: the correction for kVar/kStd, p for kNorm.
absl::Status ReduceStat(StatOp op, const StridedView& in, const bool* reduced,
                        double param, const StridedView& out,
                        StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_REDUCE_H_

// Elementwise CPU kernels: copy/cast, fill, unary and binary maps.
//
// Contract: views passed together have identical sizes (the runtime expands
// broadcast operands with stride 0 first); `out` never overlaps an input
// unless it is the same view (in-place). Binary/unary kernels compute in the
// dtype of `out`; inputs already have that dtype, except Copy which converts.
#ifndef TENSORD_KERNELS_CPU_ELEMENTWISE_H_
#define TENSORD_KERNELS_CPU_ELEMENTWISE_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

enum class UnaryOp { kNeg, kRelu, kAbs, kExp, kLog, kSqrt, kTanh, kSigmoid };
enum class BinaryOp { kAdd, kSub, kMul, kDiv, kMax, kMin };

// out = convert(in), any dtype to any dtype (same sizes, any strides).
absl::Status Copy(const StridedView& in, const StridedView& out);

// Every element of out = value (converted to out's dtype).
absl::Status Fill(const StridedView& out, double value);

// out[i] = start + i * step for a 1-d out.
absl::Status Arange(const StridedView& out, double start, double step);

absl::Status Unary(UnaryOp op, const StridedView& in, const StridedView& out);

// out = a OP (alpha * b); alpha applies to kAdd/kSub only.
absl::Status Binary(BinaryOp op, const StridedView& a, const StridedView& b,
                    double alpha, const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_ELEMENTWISE_H_

// Elementwise CPU kernels: copy/cast, fill, unary and binary maps,
// comparisons, where, clamp.
//
// Contract: views passed together have identical sizes (the runtime expands
// broadcast operands with stride 0 first); `out` never overlaps an input
// unless it is the same view (in-place). Unary/binary kernels compute in the
// dtype of `out` and their inputs already have it; Copy converts; Compare
// reads two inputs of one dtype and writes bool. Half types are handled only
// by Copy and Fill (the runtime computes half ops in float32).
#ifndef TENSORD_KERNELS_CPU_ELEMENTWISE_H_
#define TENSORD_KERNELS_CPU_ELEMENTWISE_H_

#include "absl/status/status.h"
#include "runtime/core/kernel_ops.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

using ::tensord::BinaryOp;  // runtime/core/kernel_ops.h
using ::tensord::CompareOp;
using ::tensord::UnaryOp;

// out = convert(in), any dtype to any dtype (same sizes, any strides).
absl::Status Copy(const StridedView& in, const StridedView& out);

// Every element of out = value (converted to out's dtype).
absl::Status Fill(const StridedView& out, double value);

// out[i] = start + i * step for a 1-d out.
absl::Status Arange(const StridedView& out, double start, double step);

// out[i] = start + i * step, with the second half computed from the end as
// PyTorch's linspace does (end - (n - 1 - i) * step).
absl::Status Linspace(const StridedView& out, double start, double end);

absl::Status Unary(UnaryOp op, const StridedView& in, const StridedView& out);

// out = min(max(in, lo), hi); a bound is skipped when its has_* is false.
absl::Status Clamp(const StridedView& in, bool has_lo, double lo, bool has_hi,
                   double hi, const StridedView& out);

// out = a OP (alpha * b); alpha applies to kAdd/kSub only.
absl::Status Binary(BinaryOp op, const StridedView& a, const StridedView& b,
                    double alpha, const StridedView& out);

// out (bool) = a OP b; a and b have one dtype. Logical ops test != 0.
absl::Status Compare(CompareOp op, const StridedView& a, const StridedView& b,
                     const StridedView& out);

// out (bool) = !in.
absl::Status LogicalNot(const StridedView& in, const StridedView& out);

// out (bool) = the sign bit of in (true for -0.0 and negative NaNs).
absl::Status Signbit(const StridedView& in, const StridedView& out);

// in = mantissa * 2^exponent with |mantissa| in [0.5, 1) (C's frexp: 0, inf
// and NaN keep their value, exponent 0); in and mantissa float32 or float64,
// exponent int32.
absl::Status Frexp(const StridedView& in, const StridedView& mantissa,
                   const StridedView& exponent);

// out = polygamma(n, in), n >= 0 (checked by the row); floating dtypes.
absl::Status Polygamma(int n, const StridedView& in, const StridedView& out);

// out = cond ? a : b; cond is bool, a/b/out share a dtype.
absl::Status Where(const StridedView& cond, const StridedView& a,
                   const StridedView& b, const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_ELEMENTWISE_H_

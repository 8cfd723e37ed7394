// CUDA elementwise kernels: copy/cast, fill, arange, unary and binary maps,
// comparisons, where, clamp. Plain C++ declarations (no CUDA types), so the
// runtime includes this header without nvcc; the definitions are in
// elementwise.cu (maps; their per-element math in elementwise_fns.cuh),
// copy.cu (copies, creation) and compare.cu (comparisons, logical_not,
// where, clamp) and exist only in CUDA builds.
//
// Contract (as kernels/cpu/elementwise.h): views passed together have
// identical sizes (broadcast operands carry stride 0); `out` never overlaps
// an input unless it is the same view. Every call only enqueues work on
// `stream` (asynchronous); errors are launch errors (Note [Sticky CUDA
// errors] in cuda_check.h). Unary/Binary/Compare/Where/Clamp take operands
// already in out's dtype (Compare: in one dtype): float32/float64/integer/
// bool, and float16/bfloat16, which they read and write as such and compute
// in float (Note [Native half kernels] in elementwise.cu). Copy, Fill and
// Arange handle every dtype.
#ifndef TENSORD_KERNELS_CUDA_ELEMENTWISE_H_
#define TENSORD_KERNELS_CUDA_ELEMENTWISE_H_

#include "absl/status/status.h"
#include "runtime/core/kernel_ops.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

using ::tensord::BinaryOp;  // runtime/core/kernel_ops.h
using ::tensord::CompareOp;
using ::tensord::UnaryOp;

// out = convert(in), any dtype to any dtype (same sizes, any strides).
absl::Status Copy(const StridedView& in, const StridedView& out,
                  StreamHandle stream);

// Every element of out = value (converted to out's dtype).
absl::Status Fill(const StridedView& out, double value, StreamHandle stream);

// out[i] = start + i * step for a 1-d out.
absl::Status Arange(const StridedView& out, double start, double step,
                    StreamHandle stream);

absl::Status Unary(UnaryOp op, const StridedView& in, const StridedView& out,
                   StreamHandle stream);

// out = a OP (alpha * b); alpha applies to kAdd/kSub only.
absl::Status Binary(BinaryOp op, const StridedView& a, const StridedView& b,
                    double alpha, const StridedView& out, StreamHandle stream);

// out (bool) = a OP b; a and b share a dtype. Logical ops test != 0.
absl::Status Compare(CompareOp op, const StridedView& a, const StridedView& b,
                     const StridedView& out, StreamHandle stream);

// out (bool) = !in.
absl::Status LogicalNot(const StridedView& in, const StridedView& out,
                        StreamHandle stream);

// out (bool) = the sign bit of in (true for -0.0 and negative NaNs).
absl::Status Signbit(const StridedView& in, const StridedView& out,
                     StreamHandle stream);

// out = polygamma(n, in), n >= 0 (checked by the row); floating dtypes.
absl::Status Polygamma(int n, const StridedView& in, const StridedView& out,
                       StreamHandle stream);

// dx = dy * gelu'(x) (exact, or tanh-approximated), kernels/cpu/gelu.h's
// formulas; float32/float64 operands of dx's dtype, any strides.
absl::Status GeluBackward(const StridedView& dy, const StridedView& x,
                          bool tanh, const StridedView& dx,
                          StreamHandle stream);

// out = cond ? a : b; cond is bool, a/b/out share a dtype.
absl::Status Where(const StridedView& cond, const StridedView& a,
                   const StridedView& b, const StridedView& out,
                   StreamHandle stream);

// out = min(max(in, lo), hi); a bound is skipped when its has_* is false.
absl::Status Clamp(const StridedView& in, bool has_lo, double lo, bool has_hi,
                   double hi, const StridedView& out, StreamHandle stream);

// The first version of this file: out = a + alpha * b in float32 (kept for
// its float4 path; Binary(kAdd) calls it for contiguous float32).
absl::Status AddFloat32(const StridedView& a, const StridedView& b, float alpha,
                        const StridedView& out, StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_ELEMENTWISE_H_

// LDL^T of symmetric matrices with Bunch-Kaufman pivoting and solves from
// it (LAPACK sytrf/sytrs), batched, as ATen's linalg_ldl_factor_ex and
// linalg_ldl_solve: the factor is read from and written to the lower
// triangle (ATen takes no `upper`), the strict upper triangle zero.
//
// Contract as linalg.h's: C-contiguous float32/float64 matrices [.., n, n],
// int32 pivots [.., n] (LAPACK's: k > 0 a 1 x 1 block with rows swapped
// with k; a pair of equal negatives a 2 x 2 block) and info [..]; one batch
// for all operands (the ops layer broadcasts).
#ifndef TENSORD_KERNELS_CPU_LDL_H_
#define TENSORD_KERNELS_CPU_LDL_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// ld, pivots and info (k > 0: D[k, k] is exactly zero) of a [.., n, n].
absl::Status LdlFactor(const StridedView& a, const StridedView& ld,
                       const StridedView& pivots, const StridedView& info);

// x = A^-1 b for A = L D L^T from LdlFactor; b and x [.., n, k]. Pivots are
// data: one that LAPACK would read out of bounds (outside -n..n, 0, or an
// unpaired negative) reads as a 1 x 1 block without interchange.
absl::Status LdlSolve(const StridedView& ld, const StridedView& pivots,
                      const StridedView& b, const StridedView& x);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_LDL_H_

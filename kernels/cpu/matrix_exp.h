// The matrix exponential of a stack of square matrices (linalg_matrix_exp):
// Higham's scaling and squaring with the degree-13 Pade approximant
// ("The scaling and squaring method for the matrix exponential revisited",
// SIAM J. Matrix Anal. Appl. 26(4), 2005), in float64 for both dtypes
// (float32 inputs come out correctly rounded where ATen's float Taylor
// series loses a few ulps); the Pade denominator solved with LAPACK's LU.
//
// Contract as linalg.h's: a and out C-contiguous float32/float64 [.., n,
// n], one batch. A matrix with a non-finite entry gives NaN everywhere.
#ifndef TENSORD_KERNELS_CPU_MATRIX_EXP_H_
#define TENSORD_KERNELS_CPU_MATRIX_EXP_H_

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

absl::Status MatrixExp(const StridedView& a, const StridedView& out);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_MATRIX_EXP_H_

// The elementwise and reduction operations the kernels implement, one list
// for the CPU kernels (kernels/cpu) and the CUDA ones (kernels/cuda), which
// both name them through using-declarations: a row picks the same member on
// either device.
#ifndef TENSORD_RUNTIME_CORE_KERNEL_OPS_H_
#define TENSORD_RUNTIME_CORE_KERNEL_OPS_H_

#include <cstdint>
#include <limits>

namespace tensord {

enum class UnaryOp {
  kNeg,
  kRelu,
  kAbs,
  kExp,
  kLog,
  kSqrt,
  kTanh,
  kSigmoid,
  kSign,
  kLog1p,
  kExpm1,
  kRsqrt,
  kSin,
  kCos,
  kGelu,
  kGeluTanh,  // approximate="tanh"
  kSilu,
  kErf,
  kFloor,
  kCeil,
  kRound,
  kReciprocal,
  kBitwiseNot,
  kTrunc,
  kSquare,
  // floating results only (the rows cast integer inputs to float first)
  kTan,
  kAtan,
  kAsin,
  kAcos,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kLog2,
  kLog10,
  kExp2,
  kErfc,
  kErfinv,
  kLgamma,
  kDigamma,
  // torch.special's normal-distribution, Bessel and Airy functions (Note
  // [Special function ops] in runtime/core/special_ops.h): floating results
  // only; kI0..kAiryAi is one range (IsSpecialUnary).
  kI0,  // i0 and modified_bessel_i0
  kI0e,
  kI1,  // i1 and modified_bessel_i1
  kI1e,
  kNdtri,
  kLogNdtr,
  kErfcx,
  kBesselJ0,
  kBesselJ1,
  kBesselY0,
  kBesselY1,
  kBesselK0,
  kBesselK1,
  kScaledBesselK0,
  kScaledBesselK1,
  kSphericalBesselJ0,
  kAiryAi,  // runtime/core/airy_math.h
};
enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,
  kMin,
  kPow,
  kRemainder,
  kFloorDiv,
  kTruncDiv,
  kBitAnd,
  kBitOr,
  kBitXor,
  // a where b > alpha, else 0: relu's backward (PyTorch's threshold_backward)
  // in one pass, with b the forward's input or output and alpha 0.
  kThresholdBackward,
  kAtan2,  // atan2(a, b): the angle of (b, a); floating dtypes only
  // PyTorch's fmax/fmin (NaN only if both are), fmod (C's: the sign of a),
  // hypot, copysign, nextafter, zeta(x=a, q=b): floating dtypes only, but
  // fmax/fmin/fmod also integers.
  kFmax,
  kFmin,
  kFmod,
  kHypot,
  kCopysign,
  kNextafter,
  kZeta,
  // torch.special's orthogonal polynomials p_n(x) with x = a, n = b
  // (runtime/core/polynomial_math.h) and the regularized incomplete gamma
  // functions P(a, x), Q(a, x) (igamma, igammac: runtime/core/
  // igamma_math.h): floating dtypes only; kChebyshevT..kIgammac is one range
  // (IsSpecialBinary).
  kChebyshevT,
  kChebyshevU,
  kChebyshevV,
  kChebyshevW,
  kShiftedChebyshevT,
  kShiftedChebyshevU,
  kShiftedChebyshevV,
  kShiftedChebyshevW,
  kHermiteH,
  kHermiteHe,
  kLaguerreL,
  kLegendreP,
  kIgamma,
  kIgammac,
};
enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kAnd, kOr, kXor };

enum class ReduceOp { kSum, kMean, kProd, kMax, kMin, kAll, kAny };

// The value a scatter/index reduction starts from when it leaves out the
// target's own values (include_self=False): 1, -inf (or lowest), +inf (or
// max), else 0. Host code, shared by the CPU and CUDA index kernels.
template <typename T>
T ReduceIdentity(ReduceOp op) {
  using L = std::numeric_limits<T>;
  switch (op) {
    case ReduceOp::kProd:
      return T(1);
    case ReduceOp::kMax:
      return L::has_infinity ? T(-L::infinity()) : L::lowest();
    case ReduceOp::kMin:
      return L::has_infinity ? L::infinity() : L::max();
    default:
      return T(0);
  }
}
// Statistics that need more than one pass or an index.
enum class StatOp { kVar, kStd, kLogSumExp, kNorm, kArgMax, kArgMin };

// The fused cross entropy's reduction and geometry (kernels/cpu/
// cross_entropy.h, kernels/cuda/loss.h): logits seen as [N, C, S].
enum class LossReduction { kNone, kMean, kSum };

struct CrossEntropyGeometry {
  int64_t n, c, s;  // batch, classes, trailing positions
  int64_t ignore_index;
  double label_smoothing;
  LossReduction reduction;
  // The input is already log-probabilities (nll_loss): its log-sum-exp is
  // taken as 0 and the backward has no softmax term.
  bool log_probs = false;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_KERNEL_OPS_H_

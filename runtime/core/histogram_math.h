// torch.histc's choice of bin for one element, as scalar code for the CPU
// kernel (kernels/cpu/histogram.cc) and the CUDA one (kernels/cuda/
// distance.cu: TD_HOST_DEVICE): one definition, so both devices count alike.
//
// Note [Histc bins]: PyTorch's CPU histc (histogramdd's LINEAR_INTERPOLATION
// path, which histc takes without the local search that histogram does)
// places x, with left = T(min) and right = T(max) the outer edges in the
// input's dtype T, in bin
//   pos = int64((x - left) * bins / (right - left))
// computed in T's arithmetic: float32 and float64 natively, and for float16
// and bfloat16 every operation rounded back to T (c10's Half and BFloat16
// operators compute in float and round; `bins` itself is converted to T
// first). Elements outside [left, right], NaN among them, count nowhere;
// pos == bins (x == right: the last bin includes its right edge) counts in
// the last bin. So a value close to an inner edge lands where PyTorch puts
// it, which is not always where the exact edge would.
#ifndef TENSORD_RUNTIME_CORE_HISTOGRAM_MATH_H_
#define TENSORD_RUNTIME_CORE_HISTOGRAM_MATH_H_

#include <cstdint>

#include "runtime/core/special_math.h"  // TD_HOST_DEVICE

namespace tensord {

// The bin of x in [0, bins), or -1 for an element that counts nowhere. C is
// the type computed in (float for the half types), `round(v)` rounds a C
// result to the element type's precision (the identity for float and
// double).
template <typename C, typename Round>
TD_HOST_DEVICE inline int64_t HistcBin(C x, C left, C right, int64_t bins,
                                       Round round) {
  if (!(x >= left && x <= right)) return -1;
  const C width = round(right - left);
  const C scaled = round(round(x - left) * round(static_cast<C>(bins)));
  const C q = round(scaled / width);
  // x == right gives bins (the last bin includes its right edge); a range
  // wider than C's largest value gives inf or NaN here, which no int64 holds.
  if (q >= static_cast<C>(bins)) return bins - 1;
  return q > C{0} ? static_cast<int64_t>(q) : 0;
}

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_HISTOGRAM_MATH_H_

// A contiguous tensor seen as [outer, size, inner] around one dim, for the
// one-dim CUDA kernels (sort.cu, scan.cu): row `slice` = o * inner + i runs
// along dim with stride inner. nvcc only.
#ifndef TENSORD_KERNELS_CUDA_DIM_LAYOUT_CUH_
#define TENSORD_KERNELS_CUDA_DIM_LAYOUT_CUH_

#include <cstdint>

#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

struct Layout {
  int64_t outer = 1, size = 1, inner = 1;
};

// 0-d views count as [1].
inline Layout Around(const StridedView& v, int dim) {
  Layout l;
  if (v.ndim == 0) return l;
  for (int i = 0; i < dim; ++i) l.outer *= v.sizes[i];
  l.size = v.sizes[dim];
  for (int i = dim + 1; i < v.ndim; ++i) l.inner *= v.sizes[i];
  return l;
}

// Offset of element k of row `slice` (= o * inner + i) in [outer, size,
// inner].
__device__ __forceinline__ int64_t At(const Layout& l, int64_t slice,
                                      int64_t k) {
  const int64_t o = slice / l.inner, i = slice % l.inner;
  return (o * l.size + k) * l.inner + i;
}

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_DIM_LAYOUT_CUH_

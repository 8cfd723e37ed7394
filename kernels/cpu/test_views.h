// Test helper: a contiguous StridedView over a std::vector (kernel tests).
#ifndef TENSORD_KERNELS_CPU_TEST_VIEWS_H_
#define TENSORD_KERNELS_CPU_TEST_VIEWS_H_

#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {
namespace testing {

template <typename T>
StridedView View(std::vector<T>& v, std::vector<int64_t> sizes) {
  StridedView s;
  s.data = v.data();
  s.dtype = std::is_same_v<T, float>    ? DType::kFloat32
            : std::is_same_v<T, double> ? DType::kFloat64
                                        : DType::kInt64;
  s.ndim = static_cast<int>(sizes.size());
  int64_t stride = 1;
  for (int i = s.ndim - 1; i >= 0; --i) {
    s.sizes[i] = sizes[i], s.strides[i] = stride;
    stride *= sizes[i];
  }
  return s;
}

// n values drawn uniformly from [lo, hi): Random(n, &rng), Random<float>(...).
template <typename T = double>
std::vector<T> Random(int64_t n, std::mt19937* rng, double lo = -1,
                      double hi = 1) {
  std::uniform_real_distribution<T> u(static_cast<T>(lo), static_cast<T>(hi));
  std::vector<T> v(n);
  for (T& x : v) x = u(*rng);
  return v;
}

}  // namespace testing
}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_TEST_VIEWS_H_

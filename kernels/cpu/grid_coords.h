// The grid samplers' coordinate arithmetic (ATen's GridSampler.h, same names
// and steps), shared by the 2-d and 3-d kernels (grid_sample.cc,
// grid_sample_3d.cc): a grid coordinate in [-1, 1] to a source index through
// unnormalisation and padding, each step with its derivative. Header-only
// templates; internal to kernels/cpu.
#ifndef TENSORD_KERNELS_CPU_GRID_COORDS_H_
#define TENSORD_KERNELS_CPU_GRID_COORDS_H_

#include <cmath>
#include <cstdint>

#include "kernels/cpu/grid_sample.h"

namespace tensord {
namespace cpu {
namespace grid_coords {

// [-1, 1] -> pixel index, and its derivative in *grad.
template <typename T>
T Unnormalize(T coord, int64_t size, bool align_corners, T* grad) {
  if (align_corners) {
    *grad = static_cast<T>(size - 1) / 2;
    return ((coord + 1) / 2) * (size - 1);
  }
  *grad = static_cast<T>(size) / 2;
  return ((coord + 1) * size - 1) / 2;
}

template <typename T>
T Clip(T in, int64_t limit, T* grad) {
  if (in <= static_cast<T>(0)) {
    *grad = 0;
    return 0;
  }
  const T max = static_cast<T>(limit - 1);
  if (in >= max) {
    *grad = 0;
    return max;
  }
  *grad = 1;
  return in;
}

// Reflects `in` into [twice_low / 2, twice_high / 2].
template <typename T>
T Reflect(T in, int64_t twice_low, int64_t twice_high, T* grad) {
  if (twice_low == twice_high) {
    *grad = 0;
    return 0;
  }
  const T min = static_cast<T>(twice_low) / 2;
  const T span = static_cast<T>(twice_high - twice_low) / 2;
  in = in - min;
  T sign = 1;
  if (in < static_cast<T>(0)) {
    sign = -1;
    in = -in;
  }
  const T extra = std::fmod(in, span);
  // (the parity of the flips without an integer conversion: a grid far out
  // of range must not overflow it)
  if (std::fmod(std::floor(in / span), T(2)) == 0) {
    *grad = sign;
    return extra + min;
  }
  *grad = -sign;
  return span - extra + min;
}

// A pixel coordinate after padding (border: clipped; reflection: reflected,
// then clipped), and the derivative of that step in *grad.
template <typename T>
T Pad(T coord, int64_t size, GridPadding padding, bool align_corners, T* grad) {
  *grad = 1;
  T g_clip, g_refl;
  if (padding == GridPadding::kBorder) {
    coord = Clip(coord, size, &g_clip);
    *grad = g_clip;
  } else if (padding == GridPadding::kReflection) {
    coord = align_corners ? Reflect(coord, 0, 2 * (size - 1), &g_refl)
                          : Reflect(coord, -1, 2 * size - 1, &g_refl);
    coord = Clip(coord, size, &g_clip);
    *grad = g_refl * g_clip;
  }
  return coord;
}

// The source index of grid coordinate `coord`, and d index / d coord.
template <typename T>
T SourceIndex(T coord, int64_t size, GridPadding padding, bool align_corners,
              T* grad) {
  T g_unnorm, g_pad;
  coord = Unnormalize(coord, size, align_corners, &g_unnorm);
  coord = Pad(coord, size, padding, align_corners, &g_pad);
  *grad = g_unnorm * g_pad;
  return coord;
}

// A pixel coordinate as an index; far outside any image (or NaN, from a
// user's grid) as -2, out of bounds without an undefined conversion.
template <typename T>
int64_t ToIndex(T v) {
  return v >= T(-2) && v <= T(int64_t{1} << 40) ? static_cast<int64_t>(v) : -2;
}

}  // namespace grid_coords
}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_GRID_COORDS_H_

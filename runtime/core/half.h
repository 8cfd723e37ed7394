// float16 and bfloat16 as storage types: bit conversions to and from float.
//
// CPU kernels do not compute in half types; the dispatcher converts half
// operands to float32, runs the float32 kernel and converts the results back
// (Note [Half compute] in runtime/ops/dispatch.cc). Only copies read and
// write these types directly, through the structs below.
#ifndef TENSORD_RUNTIME_CORE_HALF_H_
#define TENSORD_RUNTIME_CORE_HALF_H_

#include <cstdint>
#include <cstring>

namespace tensord {

inline float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, overflow to infinity, NaN kept quiet.
inline uint16_t FloatToHalfBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  x &= 0x7fffffff;
  if (x >= 0x7f800000) {
    return sign | 0x7c00 | (x > 0x7f800000 ? 0x200 : 0);
  }
  if (x >= 0x477ff000) return sign | 0x7c00;  // rounds past 65504
  if (x < 0x38800000) {                       // subnormal half or zero
    if (x < 0x33000000) return sign;
    const uint32_t shift = 113 - (x >> 23) + 13;
    const uint32_t mant = (x & 0x7fffff) | 0x800000;
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t r = x - 0x38000000;  // rebias exponent 127 -> 15
  r += 0xfff + ((r >> 13) & 1);
  return sign | static_cast<uint16_t>(r >> 13);
}

inline float BFloat16BitsToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t FloatToBFloat16Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

// Element types for copies: constructible from and convertible to float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(FloatToHalfBits(f)) {}
  operator float() const { return HalfBitsToFloat(bits); }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(FloatToBFloat16Bits(f)) {}
  operator float() const { return BFloat16BitsToFloat(bits); }
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_HALF_H_

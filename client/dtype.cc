#include "client/dtype.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tensord {
inline namespace client {
namespace {

struct DTypeRow {
  DType dtype;
  absl::string_view name;
  size_t itemsize;
};

constexpr DTypeRow kDTypes[] = {
    {DType::kFloat32, "float32", 4}, {DType::kFloat64, "float64", 8},
    {DType::kFloat16, "float16", 2}, {DType::kBFloat16, "bfloat16", 2},
    {DType::kInt64, "int64", 8},     {DType::kInt32, "int32", 4},
    {DType::kInt8, "int8", 1},       {DType::kUInt8, "uint8", 1},
    {DType::kBool, "bool", 1},
};

const DTypeRow& Row(DType dtype) {
  return kDTypes[static_cast<int>(dtype) - 1];
}

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float BitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace

size_t ItemSize(DType dtype) { return Row(dtype).itemsize; }

absl::string_view DTypeName(DType dtype) { return Row(dtype).name; }

absl::StatusOr<DType> DTypeFromName(absl::string_view name) {
  for (const DTypeRow& row : kDTypes) {
    if (row.name == name) return row.dtype;
  }
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kFloat16;
  if (name == "long") return DType::kInt64;
  if (name == "int") return DType::kInt32;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name, "'; expected e.g. float32"));
}

absl::StatusOr<DType> DTypeFromWire(int value) {
  if (value < 1 || value > 9) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown wire dtype ", value));
  }
  return static_cast<DType>(value);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return BitsToFloat(sign | 0x7f800000 | (mant << 13));
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24.
    float value = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -value : value;
  }
  return BitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t FloatToHalf(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t sign = (bits >> 16) & 0x8000;
  const float mag = std::fabs(value);
  if (std::isnan(value)) return sign | 0x7e00;
  if (mag >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (mag < 6.103515625e-05f) {
    // Subnormal half: round mag / 2^-24 to nearest even integer.
    return sign | static_cast<uint16_t>(std::nearbyint(mag * 16777216.0f));
  }
  uint32_t m = FloatBits(mag);
  // Round the 13 dropped mantissa bits to nearest even.
  m += 0xfff + ((m >> 13) & 1);
  return sign | static_cast<uint16_t>((m - (112u << 23)) >> 13);
}

float BFloat16ToFloat(uint16_t bits) {
  return BitsToFloat(static_cast<uint32_t>(bits) << 16);
}

uint16_t FloatToBFloat16(float value) {
  uint32_t bits = FloatBits(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace client
}  // namespace tensord

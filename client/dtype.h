// Element types as the client sees them. The numbering matches the wire enum
// (tensord.v1.DType), so conversion is a range check, not a table.
//
// Note [Client namespace]: the client lives in `tensord::client`, an inline
// namespace, so users write `tensord::Tensor` while the mangled names stay
// distinct from the daemon's runtime types (a test may link both).
#ifndef TENSORD_CLIENT_DTYPE_H_
#define TENSORD_CLIENT_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {

enum class DType : int32_t {
  kFloat32 = 1,
  kFloat64 = 2,
  kFloat16 = 3,
  kBFloat16 = 4,
  kInt64 = 5,
  kInt32 = 6,
  kInt8 = 7,
  kUInt8 = 8,
  kBool = 9,
};

// Bytes per element.
size_t ItemSize(DType dtype);
// PyTorch's name, e.g. "float32".
absl::string_view DTypeName(DType dtype);
absl::StatusOr<DType> DTypeFromName(absl::string_view name);

inline v1::DType ToWire(DType dtype) { return static_cast<v1::DType>(dtype); }
// INVALID_ARGUMENT for DTYPE_UNSPECIFIED or unknown values.
absl::StatusOr<DType> DTypeFromWire(int value);

// The dtype of a C++ element type: float, double, int64_t, int32_t, int8_t,
// uint8_t, bool. Other types fail to compile.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kFloat64;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::kInt8;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};

// IEEE half and bfloat16 bit patterns <-> float (round to nearest even).
float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);
float BFloat16ToFloat(uint16_t bits);
uint16_t FloatToBFloat16(float value);

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_DTYPE_H_

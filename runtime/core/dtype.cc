#include "runtime/core/dtype.h"

#include "absl/strings/str_cat.h"

namespace tensord {
namespace {

struct DTypeInfo {
  DType dtype;
  absl::string_view name;
  size_t size;
  int rank;  // position in the promotion lattice within its category
};

constexpr DTypeInfo kInfo[] = {
    {DType::kFloat32, "float32", 4, 2}, {DType::kFloat64, "float64", 8, 3},
    {DType::kFloat16, "float16", 2, 0}, {DType::kBFloat16, "bfloat16", 2, 1},
    {DType::kInt64, "int64", 8, 4},     {DType::kInt32, "int32", 4, 3},
    {DType::kInt8, "int8", 1, 1},       {DType::kUInt8, "uint8", 1, 0},
    {DType::kBool, "bool", 1, 0},
};

const DTypeInfo& Info(DType dtype) {
  return kInfo[static_cast<int>(dtype) - 1];
}

}  // namespace

size_t ItemSize(DType dtype) { return Info(dtype).size; }

absl::string_view DTypeName(DType dtype) { return Info(dtype).name; }

absl::StatusOr<DType> DTypeFromName(absl::string_view name) {
  for (const DTypeInfo& info : kInfo) {
    if (info.name == name) return info.dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", name, "'"));
}

absl::StatusOr<DType> DTypeFromWire(int32_t value) {
  if (value < 1 || value > kNumDTypes) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown dtype value ", value, " on the wire"));
  }
  return static_cast<DType>(value);
}

bool IsFloating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 ||
         dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

bool IsIntegral(DType dtype) {
  return dtype == DType::kInt64 || dtype == DType::kInt32 ||
         dtype == DType::kInt8 || dtype == DType::kUInt8;
}

DType PromoteTypes(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  const bool fa = IsFloating(a), fb = IsFloating(b);
  if (fa != fb) return fa ? a : b;
  if (fa) {
    // float16 + bfloat16 promote to float32, as in PyTorch.
    if ((a == DType::kFloat16 && b == DType::kBFloat16) ||
        (a == DType::kBFloat16 && b == DType::kFloat16)) {
      return DType::kFloat32;
    }
    return Info(a).rank > Info(b).rank ? a : b;
  }
  // uint8 with a signed type: int8 + uint8 -> int16 in PyTorch; we have no
  // int16, so the next wider signed type.
  if ((a == DType::kUInt8 && b == DType::kInt8) ||
      (a == DType::kInt8 && b == DType::kUInt8)) {
    return DType::kInt32;
  }
  return Info(a).rank > Info(b).rank ? a : b;
}

}  // namespace tensord

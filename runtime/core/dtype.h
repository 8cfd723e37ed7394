// Element types and their properties. The numbering matches proto DType so
// the wire value converts by a range check, not a table.
#ifndef TENSORD_RUNTIME_CORE_DTYPE_H_
#define TENSORD_RUNTIME_CORE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tensord {

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

inline constexpr int kNumDTypes = 9;

// Bytes per element.
size_t ItemSize(DType dtype);
// PyTorch's name, e.g. "float32".
absl::string_view DTypeName(DType dtype);
absl::StatusOr<DType> DTypeFromName(absl::string_view name);
// Converts a wire value; INVALID_ARGUMENT for unknown values.
absl::StatusOr<DType> DTypeFromWire(int32_t value);

bool IsFloating(DType dtype);  // float16/bfloat16/float32/float64
bool IsIntegral(DType dtype);  // int*, uint8 (not bool)

// PyTorch's type promotion between two tensor operands (no scalar special
// cases): bool < integers < floating; among floats, the wider one.
DType PromoteTypes(DType a, DType b);

// The default dtype of floating results (torch.get_default_dtype()).
inline constexpr DType kDefaultFloat = DType::kFloat32;

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_DTYPE_H_

// Maps a runtime DType to a C++ element type for templated CPU kernels.
#ifndef TENSORD_KERNELS_CPU_DISPATCH_H_
#define TENSORD_KERNELS_CPU_DISPATCH_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/core/dtype.h"
#include "runtime/core/half.h"

namespace tensord {
namespace cpu {

// Calls fn(T{}) with T the element type of `dtype`; UNIMPLEMENTED for types
// the CPU kernels do not compute in (float16/bfloat16 are storage-only here).
template <typename Fn>
absl::Status DispatchAll(DType dtype, absl::string_view what, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      fn(float{});
      return absl::OkStatus();
    case DType::kFloat64:
      fn(double{});
      return absl::OkStatus();
    case DType::kInt64:
      fn(int64_t{});
      return absl::OkStatus();
    case DType::kInt32:
      fn(int32_t{});
      return absl::OkStatus();
    case DType::kInt8:
      fn(int8_t{});
      return absl::OkStatus();
    case DType::kUInt8:
      fn(uint8_t{});
      return absl::OkStatus();
    case DType::kBool:
      fn(bool{});
      return absl::OkStatus();
    default:
      return absl::UnimplementedError(absl::StrCat(
          what, " does not support dtype ", DTypeName(dtype), " on cpu"));
  }
}

// As DispatchAll, but only for floating types (exp, mean, randn, ...).
template <typename Fn>
absl::Status DispatchFloat(DType dtype, absl::string_view what, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      fn(float{});
      return absl::OkStatus();
    case DType::kFloat64:
      fn(double{});
      return absl::OkStatus();
    default:
      return absl::UnimplementedError(absl::StrCat(
          what, " does not support dtype ", DTypeName(dtype), " on cpu"));
  }
}

// OK for float32 and float64 data; else an INTERNAL error naming `op` (the
// kernels whose op rows admit those two dtypes only: a row letting another one
// through is a bug, not the client's).
inline absl::Status RequireFloat(DType dtype, absl::string_view op) {
  if (dtype == DType::kFloat32 || dtype == DType::kFloat64) {
    return absl::OkStatus();
  }
  return absl::InternalError(
      absl::StrCat(op, ": expected float32 or float64 data"));
}

// As DispatchAll, plus the half types as Half/BFloat16 (copies and fills).
template <typename Fn>
absl::Status DispatchWithHalf(DType dtype, absl::string_view what, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat16:
      fn(Half{});
      return absl::OkStatus();
    case DType::kBFloat16:
      fn(BFloat16{});
      return absl::OkStatus();
    default:
      return DispatchAll(dtype, what, fn);
  }
}

// Integral and bool types only (bitwise ops).
template <typename Fn>
absl::Status DispatchIntegral(DType dtype, absl::string_view what, Fn&& fn) {
  if (dtype == DType::kFloat32 || dtype == DType::kFloat64) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " is only defined for integer and bool tensors, got ",
        DTypeName(dtype)));
  }
  return DispatchAll(dtype, what, fn);
}

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_DISPATCH_H_

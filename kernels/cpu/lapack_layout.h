// What every LAPACK kernel file shares (linalg.cc, linalg_qr.cc,
// linalg_ldl.cc, matrix_exp.cc): a row-major matrix stack seen as [batch,
// rows, cols] with LAPACK's 32-bit sizes checked, the transposing copies
// into and out of LAPACK's column-major layout, and the float32/float64
// switch. Internal to kernels/cpu.
#ifndef TENSORD_KERNELS_CPU_LAPACK_LAYOUT_H_
#define TENSORD_KERNELS_CPU_LAPACK_LAYOUT_H_

#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {
namespace lapack_layout {

// A matrix view seen as [batch, rows, cols].
struct Mats {
  int64_t batch = 1;
  int rows = 0;
  int cols = 0;
  int64_t size() const { return int64_t{rows} * cols; }
};

inline absl::StatusOr<Mats> AsMats(const StridedView& v, const char* what) {
  if (v.ndim < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected a matrix or a batch of matrices"));
  }
  const int64_t r = v.sizes[v.ndim - 2], c = v.sizes[v.ndim - 1];
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (r > kMax || c > kMax) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": matrices of ", r, " x ", c,
        " are beyond LAPACK's 32-bit sizes (at most 2^31 - 1 a side)"));
  }
  Mats m;
  for (int d = 0; d < v.ndim - 2; ++d) m.batch *= v.sizes[d];
  m.rows = static_cast<int>(r);
  m.cols = static_cast<int>(c);
  return m;
}

// col[i + j * ld] = row[i * cols + j]: a row-major matrix into LAPACK's
// column-major layout with leading dimension ld >= rows (and FromColMajor
// back).
template <typename T>
void ToColMajor(const T* row, int rows, int cols, T* col, int ld) {
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j)
      col[i + int64_t{j} * ld] = row[int64_t{i} * cols + j];
  }
}
template <typename T>
void ToColMajor(const T* row, int rows, int cols, T* col) {
  ToColMajor(row, rows, cols, col, rows);
}
template <typename T>
void FromColMajor(const T* col, int rows, int cols, T* row, int ld) {
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j)
      row[int64_t{i} * cols + j] = col[i + int64_t{j} * ld];
  }
}
template <typename T>
void FromColMajor(const T* col, int rows, int cols, T* row) {
  FromColMajor(col, rows, cols, row, rows);
}

inline absl::Status RequireFloat(const StridedView& v, const char* what) {
  if (v.dtype == DType::kFloat32 || v.dtype == DType::kFloat64) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": expected a float32 or float64 tensor, got ",
                   DTypeName(v.dtype)));
}

// Runs f(T{}) with T the float type of `a` (float32 or float64; else the
// error RequireFloat gives, naming `what`).
template <typename F>
absl::Status ForFloat(const StridedView& a, const char* what, F f) {
  TD_RETURN_IF_ERROR(RequireFloat(a, what));
  return a.dtype == DType::kFloat64 ? f(double{}) : f(float{});
}

// The size LAPACK's workspace query (lwork = -1) wrote into `query`, at
// least 1.
template <typename T>
int WorkSize(T query) {
  return query < T(1) ? 1 : static_cast<int>(query);
}

}  // namespace lapack_layout
}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_LAPACK_LAYOUT_H_

#include "kernels/cpu/matmul.h"

#include <cblas-openblas.h>

#include <type_traits>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

// BLAS takes a matrix whose rows or columns are unit-stride. Returns the
// transpose flag and leading dimension, or false if neither layout holds.
bool BlasLayout(int64_t rows, int64_t cols, int64_t row_stride,
                int64_t col_stride, CBLAS_TRANSPOSE* trans, int64_t* ld) {
  if (col_stride == 1 &&
      (rows == 1 || row_stride >= std::max<int64_t>(cols, 1))) {
    *trans = CblasNoTrans;
    *ld = rows == 1 ? std::max<int64_t>(cols, 1) : row_stride;
    return true;
  }
  if (row_stride == 1 &&
      (cols == 1 || col_stride >= std::max<int64_t>(rows, 1))) {
    *trans = CblasTrans;
    *ld = cols == 1 ? std::max<int64_t>(rows, 1) : col_stride;
    return true;
  }
  return false;
}

template <typename T>
void NaiveGemm(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k,
               const int64_t* sa, const int64_t* sb, const int64_t* sc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T acc{};
      for (int64_t p = 0; p < k; ++p) {
        acc += a[i * sa[0] + p * sa[1]] * b[p * sb[0] + j * sb[1]];
      }
      c[i * sc[0] + j * sc[1]] = acc;
    }
  }
}

template <typename T>
void MatrixProduct(const T* a, const T* b, T* c, int64_t m, int64_t n,
                   int64_t k, const int64_t* sa, const int64_t* sb,
                   const int64_t* sc) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    CBLAS_TRANSPOSE ta, tb;
    int64_t lda, ldb;
    const bool c_ok = sc[1] == 1 && (m == 1 || sc[0] >= n);
    if (m > 0 && n > 0 && k > 0 && c_ok &&
        BlasLayout(m, k, sa[0], sa[1], &ta, &lda) &&
        BlasLayout(k, n, sb[0], sb[1], &tb, &ldb)) {
      const int64_t ldc = m == 1 ? std::max<int64_t>(n, 1) : sc[0];
      Gemm<T>(ta == CblasTrans, tb == CblasTrans, m, n, k, a, lda, b, ldb, T{0},
              c, ldc);
      return;
    }
  }
  NaiveGemm(a, b, c, m, n, k, sa, sb, sc);
}

}  // namespace

absl::Status BatchedMatmul(const StridedView& a, const StridedView& b,
                           const StridedView& out) {
  if (a.ndim != 3 || b.ndim != 3 || out.ndim != 3) {
    return absl::InternalError("BatchedMatmul expects 3-d views");
  }
  return DispatchAll(out.dtype, "matmul", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return;  // rejected by shape inference
    } else {
      const int64_t batch = out.sizes[0], m = out.sizes[1], n = out.sizes[2],
                    k = a.sizes[2];
      // Products of a batch side by side on the pool; a single (or each
      // unsplit) product splits itself when wide (Note [GEMM threads]).
      ParallelFor(batch, m * n * k, [&](int64_t first, int64_t last) {
        for (int64_t i = first; i < last; ++i) {
          MatrixProduct<T>(a.ptr<const T>() + i * a.strides[0],
                           b.ptr<const T>() + i * b.strides[0],
                           out.ptr<T>() + i * out.strides[0], m, n, k,
                           a.strides + 1, b.strides + 1, out.strides + 1);
        }
      });
    }
  });
}

}  // namespace cpu
}  // namespace tensord

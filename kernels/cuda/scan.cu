// CUDA cummax/cummin, logcumsumexp, mode (from a sorted row) and
// searchsorted (sort.h), with runtime/core/scan_math.h's per-element rules,
// the CPU kernels' own. The scans and the mode walk one row per thread
// (neighbouring threads take neighbouring rows: coalesced when the dim is
// not the innermost); a row along the innermost dim of many thousands of
// elements is serial work for one thread (correct, not fast: a block scan
// as sort.cu's CumScan is the next step if it shows in a profile).
// searchsorted: one thread per value, a binary search in its row.
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dim_layout.cuh"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/sort.h"
#include "runtime/core/scan_math.h"

namespace tensord {
namespace cuda {
namespace {

template <bool kMax, typename T>
__global__ void CumExtremeKernel(const T* x, Layout l, T* values,
                                 int64_t* indices) {
  TD_GRID_STRIDE(row, l.outer * l.inner) {
    T best = x[At(l, row, 0)];
    int64_t at = 0;
    for (int64_t k = 0; k < l.size; ++k) {
      const int64_t e = At(l, row, k);
      const T v = x[e];
      if (scan::TakesOver<kMax>(v, best)) {
        best = v;
        at = k;
      }
      values[e] = best;
      indices[e] = at;
    }
  }
}

template <typename T>
__global__ void LogCumSumExpKernel(const T* x, Layout l, T* y) {
  TD_GRID_STRIDE(row, l.outer * l.inner) {
    double acc = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < l.size; ++k) {
      const int64_t e = At(l, row, k);
      acc = scan::LogAddExp(static_cast<double>(x[e]), acc);
      y[e] = static_cast<T>(acc);
    }
  }
}

template <typename T>
__global__ void ModeKernel(const T* sorted, const int64_t* positions, Layout l,
                           T* values, int64_t* indices) {
  TD_GRID_STRIDE(row, l.outer * l.inner) {
    auto at = [&](int64_t k) { return sorted[At(l, row, k)]; };
    auto pos = [&](int64_t k) { return positions[At(l, row, k)]; };
    scan::ModeOfSortedRow<T>(l.size, at, pos, &values[row], &indices[row]);
  }
}

template <typename T, typename O>
__global__ void SearchKernel(const T* bd, int64_t n, bool one_row, const T* val,
                             int64_t row_len, int64_t count, bool right,
                             O* out) {
  TD_GRID_STRIDE(e, count) {
    const T* row = bd + (one_row ? 0 : e / row_len * n);
    out[e] = static_cast<O>(scan::SearchRow<T>(
        n, [&](int64_t j) { return row[j]; }, val[e], right));
  }
}

absl::Status Unsupported(const char* what, DType dtype) {
  return absl::UnimplementedError(
      absl::StrCat(what, " on cuda: unsupported dtype ", DTypeName(dtype)));
}

}  // namespace

absl::Status CumExtreme(const StridedView& in, int dim, bool max,
                        const StridedView& values, const StridedView& indices,
                        StreamHandle stream) {
  const Layout l = Around(in, dim);
  if (in.numel() == 0) return absl::OkStatus();
  const int blocks = BlocksFor(l.outer * l.inner);
  auto s = static_cast<cudaStream_t>(stream);
  const char* what = max ? "cummax" : "cummin";
  TD_CUDA_DISPATCH(
      in.dtype, return Unsupported(what, in.dtype),
      if (max) {
        CumExtremeKernel<true, scalar_t><<<blocks, kThreads, 0, s>>>(
            in.ptr<const scalar_t>(), l, values.ptr<scalar_t>(),
            indices.ptr<int64_t>());
      } else {
        CumExtremeKernel<false, scalar_t><<<blocks, kThreads, 0, s>>>(
            in.ptr<const scalar_t>(), l, values.ptr<scalar_t>(),
            indices.ptr<int64_t>());
      });
  return LaunchStatus(max ? "cummax kernel" : "cummin kernel");
}

absl::Status LogCumSumExp(const StridedView& in, int dim,
                          const StridedView& out, StreamHandle stream) {
  const Layout l = Around(in, dim);
  if (in.numel() == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(in.dtype, return Unsupported("logcumsumexp", in.dtype),
                         LogCumSumExpKernel<scalar_t>
                         <<<BlocksFor(l.outer * l.inner), kThreads, 0, s>>>(
                             in.ptr<const scalar_t>(), l, out.ptr<scalar_t>()));
  return LaunchStatus("logcumsumexp kernel");
}

absl::Status ModeOfSorted(const StridedView& sorted,
                          const StridedView& positions, int dim,
                          const StridedView& values, const StridedView& indices,
                          StreamHandle stream) {
  const Layout l = Around(sorted, dim);
  if (sorted.numel() == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH(
      sorted.dtype, return Unsupported("mode", sorted.dtype),
      ModeKernel<scalar_t><<<BlocksFor(l.outer * l.inner), kThreads, 0, s>>>(
          sorted.ptr<const scalar_t>(), positions.ptr<const int64_t>(), l,
          values.ptr<scalar_t>(), indices.ptr<int64_t>()));
  return LaunchStatus("mode kernel");
}

absl::Status SearchSorted(const StridedView& boundaries,
                          const StridedView& values, bool right,
                          const StridedView& out, StreamHandle stream) {
  const int64_t n = boundaries.sizes[boundaries.ndim - 1];
  const int64_t row_len = values.ndim == 0 ? 1 : values.sizes[values.ndim - 1];
  const bool one_row = boundaries.ndim == 1;
  const int64_t count = values.numel();
  if (count == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  const bool wide = out.dtype == DType::kInt64;
  TD_CUDA_DISPATCH(
      values.dtype, return Unsupported("searchsorted", values.dtype),
      if (wide) {
        SearchKernel<scalar_t, int64_t><<<BlocksFor(count), kThreads, 0, s>>>(
            boundaries.ptr<const scalar_t>(), n, one_row,
            values.ptr<const scalar_t>(), row_len, count, right,
            out.ptr<int64_t>());
      } else {
        SearchKernel<scalar_t, int32_t><<<BlocksFor(count), kThreads, 0, s>>>(
            boundaries.ptr<const scalar_t>(), n, one_row,
            values.ptr<const scalar_t>(), row_len, count, right,
            out.ptr<int32_t>());
      });
  return LaunchStatus("searchsorted kernel");
}

}  // namespace cuda
}  // namespace tensord

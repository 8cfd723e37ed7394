#include "kernels/cpu/index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

// Negative indices count from the end, except where `dim` >= 0 is given
// (scatter_reduce, as PyTorch): then they are refused and the message names
// the dim.
absl::Status CheckIndices(const StridedView& index, int64_t size,
                          const char* what, int dim = -1) {
  const int64_t* idx = index.ptr<const int64_t>();
  const int64_t low = dim >= 0 ? 0 : -size;
  for (int64_t i = 0; i < index.numel(); ++i) {
    if (idx[i] < low || idx[i] >= size) {
      if (dim < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": index ", idx[i],
                         " is out of bounds for dimension with size ", size));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          what, "(): index ", idx[i], " is out of bounds for dimension ", dim,
          " with size ", size, " (indices must be in [0, ", size, "))"));
    }
  }
  return absl::OkStatus();
}

// Calls fn(flat position in `shape`, offset into `other` with the same
// coordinates but `other`'s contiguous strides, coordinate along dim).
template <typename Fn>
void ForEachCoord(const StridedView& shape, const StridedView& other, int dim,
                  Fn&& fn) {
  int64_t other_strides[kMaxDims];
  int64_t s = 1;
  for (int d = other.ndim - 1; d >= 0; --d) {
    other_strides[d] = s;
    s *= other.sizes[d];
  }
  const int64_t n = shape.numel();
  int64_t coord[kMaxDims] = {};
  for (int64_t p = 0; p < n; ++p) {
    int64_t off = 0;
    for (int d = 0; d < shape.ndim; ++d) {
      if (d != dim) off += coord[d] * other_strides[d];
    }
    fn(p, off, other_strides[dim]);
    for (int d = shape.ndim - 1; d >= 0; --d) {
      if (++coord[d] < shape.sizes[d]) break;
      coord[d] = 0;
    }
  }
}

}  // namespace

absl::Status IndexSelect(const StridedView& in, int dim,
                         const StridedView& index, const StridedView& out) {
  const int64_t size = in.ndim == 0 ? 1 : in.sizes[dim];
  if (index.numel() > 0 && size == 0) {
    return absl::InvalidArgumentError(
        "index_select: index out of range in an empty dimension");
  }
  auto status = CheckIndices(index, size, "index_select");
  if (!status.ok()) return status;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= in.sizes[d];
  for (int d = dim + 1; d < in.ndim; ++d) inner *= in.sizes[d];
  const size_t item = ItemSize(in.dtype);
  const int64_t n = index.numel();
  const int64_t* idx = index.ptr<const int64_t>();
  const char* src = static_cast<const char*>(in.data);
  char* dst = static_cast<char*>(out.data);
  ParallelFor(outer * n, inner, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t o = r / n, j = r % n;
      const int64_t k = idx[j] < 0 ? idx[j] + size : idx[j];
      std::memcpy(dst + r * inner * item, src + (o * size + k) * inner * item,
                  inner * item);
    }
  });
  return absl::OkStatus();
}

absl::Status Gather(const StridedView& in, int dim, const StridedView& index,
                    const StridedView& out) {
  const int64_t size = in.ndim == 0 ? 1 : in.sizes[dim];
  auto status = CheckIndices(index, size, "gather");
  if (!status.ok()) return status;
  const int64_t* idx = index.ptr<const int64_t>();
  const size_t item = ItemSize(in.dtype);
  const char* src = static_cast<const char*>(in.data);
  char* dst = static_cast<char*>(out.data);
  ForEachCoord(index, in, dim, [&](int64_t p, int64_t off, int64_t stride) {
    const int64_t k = idx[p] < 0 ? idx[p] + size : idx[p];
    std::memcpy(dst + p * item, src + (off + k * stride) * item, item);
  });
  return absl::OkStatus();
}

namespace {

// Calls fn(offset in out, offset in src) for each position p of index's
// shape, in row-major order: out's offset has p[dim] replaced by index[p]
// (already checked, negatives wrapped), src's is p in src's contiguous
// strides (src may be larger than index).
template <typename Fn>
void ForEachScatter(const StridedView& out, int dim, const StridedView& index,
                    const StridedView& src, Fn&& fn) {
  const int64_t size = out.ndim == 0 ? 1 : out.sizes[dim];
  const int64_t* idx = index.ptr<const int64_t>();
  int64_t src_strides[kMaxDims];
  int64_t s = 1;
  for (int d = src.ndim - 1; d >= 0; --d) {
    src_strides[d] = s;
    s *= src.sizes[d];
  }
  int64_t coord[kMaxDims] = {};
  ForEachCoord(index, out, dim, [&](int64_t p, int64_t off, int64_t stride) {
    int64_t soff = 0;
    for (int d = 0; d < index.ndim; ++d) soff += coord[d] * src_strides[d];
    const int64_t k = idx[p] < 0 ? idx[p] + size : idx[p];
    fn(off + k * stride, soff);
    for (int d = index.ndim - 1; d >= 0; --d) {
      if (++coord[d] < index.sizes[d]) break;
      coord[d] = 0;
    }
  });
}

// Integer arithmetic wraps, as PyTorch's (unsigned: no signed overflow).
template <typename T>
T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}
template <typename T>
T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

// amax/amin as PyTorch's CPU kernel: a NaN src wins, a NaN target stays.
template <typename T>
void Combine(ReduceOp op, T& t, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    t = (op == ReduceOp::kProd || op == ReduceOp::kMin) ? (t && v) : (t || v);
  } else {
    switch (op) {
      case ReduceOp::kProd:
        t = WrapMul(t, v);
        break;
      case ReduceOp::kMax:
        if (v != v || v > t) t = v;
        break;
      case ReduceOp::kMin:
        if (v != v || v < t) t = v;
        break;
      default:  // kSum, kMean
        t = WrapAdd(t, v);
    }
  }
}

}  // namespace

absl::Status Scatter(const StridedView& out, int dim, const StridedView& index,
                     const StridedView& src, bool add) {
  const int64_t size = out.ndim == 0 ? 1 : out.sizes[dim];
  auto status = CheckIndices(index, size, add ? "scatter_add" : "scatter");
  if (!status.ok()) return status;
  return DispatchAll(out.dtype, "scatter", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.ptr<T>();
    const T* sv = src.ptr<const T>();
    ForEachScatter(out, dim, index, src, [&](int64_t t, int64_t s) {
      if (add) {
        Combine(ReduceOp::kSum, o[t], sv[s]);
      } else {
        o[t] = sv[s];
      }
    });
  });
}

absl::Status ScatterAddRows(const StridedView& out, const int64_t* index,
                            int64_t stride, int64_t n, const StridedView& src) {
  const int64_t rows = out.sizes[0],
                d = out.numel() / std::max<int64_t>(rows, 1);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = index[i * stride];
    if (k < -rows || k >= rows) {
      return absl::InvalidArgumentError(
          absl::StrCat("scatter_add: index ", k,
                       " is out of bounds for dimension with size ", rows));
    }
  }
  return DispatchFloat(out.dtype, "scatter_add", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.ptr<T>();
    const T* sv = src.ptr<const T>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k =
          index[i * stride] < 0 ? index[i * stride] + rows : index[i * stride];
      T* row = o + k * d;
      const T* from = sv + i * d;
      for (int64_t j = 0; j < d; ++j) row[j] += from[j];
    }
  });
}

absl::Status ScatterReduce(const StridedView& out, int dim,
                           const StridedView& index, const StridedView& src,
                           ReduceOp op, bool include_self, const char* what) {
  const int64_t size = out.ndim == 0 ? 1 : out.sizes[dim];
  auto status = CheckIndices(index, size, what, dim);
  if (!status.ok()) return status;
  if (op == ReduceOp::kMean && out.dtype == DType::kBool) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "(): reduce='mean' does not support dtype bool"));
  }
  return DispatchAll(out.dtype, what, [&](auto tag) {
    using T = decltype(tag);
    T* o = out.ptr<T>();
    const T* sv = src.ptr<const T>();
    if (!include_self) {
      const T init = ReduceIdentity<T>(op);
      ForEachScatter(out, dim, index, src,
                     [&](int64_t t, int64_t) { o[t] = init; });
    }
    if (op != ReduceOp::kMean) {
      ForEachScatter(out, dim, index, src,
                     [&](int64_t t, int64_t s) { Combine(op, o[t], sv[s]); });
      return;
    }
    if constexpr (!std::is_same_v<T, bool>) {
      std::vector<int64_t> count(out.numel(), include_self ? 1 : 0);
      ForEachScatter(out, dim, index, src, [&](int64_t t, int64_t s) {
        o[t] = WrapAdd(o[t], sv[s]);
        ++count[t];
      });
      for (int64_t i = 0; i < out.numel(); ++i) {
        if (count[i] <= 1) continue;  // untouched (0) or one value: as is
        const T c = static_cast<T>(count[i]);
        if constexpr (std::is_integral_v<T>) {
          T q = o[i] / c;
          if constexpr (std::is_signed_v<T>) {
            if (o[i] % c != 0 && o[i] < 0) --q;  // floor: c > 0
          }
          o[i] = q;
        } else {
          o[i] = o[i] / c;
        }
      }
    }
  });
}

}  // namespace cpu
}  // namespace tensord

#include "kernels/cpu/index.h"

#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

absl::Status CheckIndices(const StridedView& index, int64_t size,
                          const char* what) {
  const int64_t* idx = index.ptr<const int64_t>();
  for (int64_t i = 0; i < index.numel(); ++i) {
    if (idx[i] < -size || idx[i] >= size) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": index ", idx[i],
                       " is out of bounds for dimension with size ", size));
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

absl::Status Scatter(const StridedView& out, int dim, const StridedView& index,
                     const StridedView& src, bool add) {
  const int64_t size = out.ndim == 0 ? 1 : out.sizes[dim];
  auto status = CheckIndices(index, size, add ? "scatter_add" : "scatter");
  if (!status.ok()) return status;
  const int64_t* idx = index.ptr<const int64_t>();
  // src may be larger than index: walk index's coordinates in src too.
  int64_t src_strides[kMaxDims];
  int64_t s = 1;
  for (int d = src.ndim - 1; d >= 0; --d) {
    src_strides[d] = s;
    s *= src.sizes[d];
  }
  return DispatchAll(out.dtype, "scatter", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.ptr<T>();
    const T* sv = src.ptr<const T>();
    int64_t coord[kMaxDims] = {};
    ForEachCoord(index, out, dim, [&](int64_t p, int64_t off, int64_t stride) {
      int64_t soff = 0;
      for (int d = 0; d < index.ndim; ++d) soff += coord[d] * src_strides[d];
      const int64_t k = idx[p] < 0 ? idx[p] + size : idx[p];
      T& target = o[off + k * stride];
      if constexpr (std::is_same_v<T, bool>) {
        target = add ? (target || sv[soff]) : sv[soff];
      } else {
        target = add ? T(target + sv[soff]) : sv[soff];
      }
      for (int d = index.ndim - 1; d >= 0; --d) {
        if (++coord[d] < index.sizes[d]) break;
        coord[d] = 0;
      }
    });
  });
}

}  // namespace cpu
}  // namespace tensord

// CUDA indexing kernels (index.h). Bytes move as elements of the view's
// item size (index_select, gather, scatter without add work for every
// dtype); scatter_add uses atomics of the element type; scatter_reduce
// atomic adds (sum, mean) or compare-and-swap loops (prod, amax, amin).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/index.h"
#include "kernels/cuda/loops.cuh"

namespace tensord {
namespace cuda {
namespace {

struct Dims {
  int ndim;
  int64_t sizes[kMaxDims];    // the iteration shape (index's)
  int64_t strides[kMaxDims];  // contiguous strides of the indexed tensor
};

Dims MakeDims(const StridedView& iter, const StridedView& indexed) {
  Dims d;
  d.ndim = iter.ndim;
  int64_t stride = 1;
  for (int k = indexed.ndim - 1; k >= 0; --k) {
    d.strides[k] = stride;
    stride *= indexed.sizes[k];
  }
  for (int k = 0; k < iter.ndim; ++k) d.sizes[k] = iter.sizes[k];
  return d;
}

__device__ void NoteBad(int64_t* bad, int64_t value) {
  atomicCAS(reinterpret_cast<unsigned long long*>(bad),
            static_cast<unsigned long long>(-1LL),
            static_cast<unsigned long long>(value));
}

// Offset into the indexed tensor of iteration element `i` (contiguous over
// d.sizes) with coordinate `dim` replaced by `idx`; src_off: i's offset in
// a tensor of `other` contiguous strides.
__device__ int64_t IndexedOffset(const Dims& d, int dim, int64_t i, int64_t idx,
                                 const int64_t* other, int64_t* other_off) {
  int64_t off = 0, o2 = 0;
  for (int k = d.ndim - 1; k >= 0; --k) {
    const int64_t c = i % d.sizes[k];
    i /= d.sizes[k];
    off += (k == dim ? idx : c) * d.strides[k];
    if (other != nullptr) o2 += c * other[k];
  }
  if (other_off != nullptr) *other_off = o2;
  return off;
}

__global__ void IndexSelectKernel(const char* in, const int64_t* index,
                                  char* out, int64_t outer, int64_t size,
                                  int64_t n, int64_t inner, size_t item,
                                  int64_t* bad) {
  const int64_t total = outer * n * inner;
  TD_GRID_STRIDE(e, total) {
    const int64_t i = e % inner, j = (e / inner) % n, o = e / (inner * n);
    int64_t idx = index[j];
    if (idx < 0) idx += size;
    if (idx < 0 || idx >= size) {
      NoteBad(bad, index[j]);
      continue;
    }
    const char* src = in + ((o * size + idx) * inner + i) * item;
    char* dst = out + e * item;
    for (size_t b = 0; b < item; ++b) dst[b] = src[b];
  }
}

__global__ void GatherKernel(const char* in, Dims d, int dim, int64_t size,
                             const int64_t* index, char* out, int64_t total,
                             size_t item, int64_t* bad) {
  TD_GRID_STRIDE(i, total) {
    int64_t idx = index[i];
    if (idx < 0) idx += size;
    if (idx < 0 || idx >= size) {
      NoteBad(bad, index[i]);
      continue;
    }
    const int64_t off = IndexedOffset(d, dim, i, idx, nullptr, nullptr);
    const char* src = in + off * item;
    char* dst = out + i * item;
    for (size_t b = 0; b < item; ++b) dst[b] = src[b];
  }
}

template <typename T>
__device__ void AtomicAdd(T* p, T v) {
  if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p),
              static_cast<unsigned long long>(v));
  } else {
    atomicAdd(p, v);
  }
}

template <typename T, bool kAdd>
__global__ void ScatterKernel(T* out, Dims d, int dim, int64_t size,
                              const int64_t* index, const T* src, Dims src_dims,
                              int64_t total, int64_t* bad) {
  TD_GRID_STRIDE(i, total) {
    int64_t idx = index[i];
    if (idx < 0) idx += size;
    if (idx < 0 || idx >= size) {
      NoteBad(bad, index[i]);
      continue;
    }
    int64_t src_off;
    const int64_t off =
        IndexedOffset(d, dim, i, idx, src_dims.strides, &src_off);
    if constexpr (kAdd) {
      AtomicAdd(out + off, src[src_off]);
    } else {
      out[off] = src[src_off];
    }
  }
}

// scatter_reduce: kernels/cpu/index.cc's Combine is the reference (the
// NaN rules and integer wrap-around are the same).
template <typename T>
__device__ T CombineValue(ReduceOp op, T t, T v) {
  switch (op) {
    case ReduceOp::kProd:
      if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(static_cast<unsigned long long>(t) *
                              static_cast<unsigned long long>(v));
      } else {
        return t * v;
      }
    case ReduceOp::kMax:
      return (v != v || v > t) ? v : t;
    case ReduceOp::kMin:
      return (v != v || v < t) ? v : t;
    default:
      return t + v;
  }
}

// *p = CombineValue(op, *p, v) atomically: a compare-and-swap loop on the
// element's bits (4- or 8-byte types).
template <typename T>
__device__ void AtomicCombine(T* p, T v, ReduceOp op) {
  using Word =
      std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
  static_assert(sizeof(T) == sizeof(Word), "4- or 8-byte types only");
  Word* word = reinterpret_cast<Word*>(p);
  Word old = *word;
  while (true) {
    T cur;
    memcpy(&cur, &old, sizeof(T));
    const T next = CombineValue(op, cur, v);
    Word next_bits;
    memcpy(&next_bits, &next, sizeof(T));
    if (next_bits == old) return;  // nothing to change
    const Word seen = atomicCAS(word, old, next_bits);
    if (seen == old) return;
    old = seen;
  }
}

// include_self=False: every position an index names starts from `value`,
// the reduction's identity (bad indices are noted by the reduce kernel).
template <typename T>
__global__ void ScatterFillKernel(T* out, Dims d, int dim, int64_t size,
                                  const int64_t* index, int64_t total,
                                  T value) {
  TD_GRID_STRIDE(i, total) {
    const int64_t idx = index[i];
    if (idx < 0 || idx >= size) continue;
    out[IndexedOffset(d, dim, i, idx, nullptr, nullptr)] = value;
  }
}

template <typename T>
__global__ void ScatterReduceKernel(T* out, Dims d, int dim, int64_t size,
                                    const int64_t* index, const T* src,
                                    Dims src_dims, int64_t total, ReduceOp op,
                                    int64_t* count, int64_t* bad) {
  TD_GRID_STRIDE(i, total) {
    const int64_t idx = index[i];
    if (idx < 0 || idx >= size) {  // negative indices are refused
      NoteBad(bad, idx);
      continue;
    }
    int64_t src_off;
    const int64_t off =
        IndexedOffset(d, dim, i, idx, src_dims.strides, &src_off);
    if (op == ReduceOp::kSum || op == ReduceOp::kMean) {
      AtomicAdd(out + off, src[src_off]);
      if (count != nullptr) AtomicAdd(count + off, int64_t{1});
    } else {
      AtomicCombine(out + off, src[src_off], op);
    }
  }
}

// mean: divide by the count (+1 for self); integers divide with floor.
template <typename T>
__global__ void ScatterMeanKernel(T* out, const int64_t* count, int64_t n,
                                  bool include_self) {
  TD_GRID_STRIDE(i, n) {
    const int64_t c = count[i] + (include_self ? 1 : 0);
    if (c <= 1) continue;  // untouched, or one value: as is
    const T ct = static_cast<T>(c);
    if constexpr (std::is_integral_v<T>) {
      T q = out[i] / ct;
      if (out[i] % ct != 0 && out[i] < 0) --q;
      out[i] = q;
    } else {
      out[i] = out[i] / ct;
    }
  }
}

}  // namespace

absl::Status ResetBadIndex(int64_t* bad, StreamHandle stream) {
  TD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(bad, 0xff, sizeof(int64_t),
                                          static_cast<cudaStream_t>(stream)));
  return absl::OkStatus();
}

absl::Status IndexSelect(const StridedView& in, int dim,
                         const StridedView& index, const StridedView& out,
                         int64_t* bad, StreamHandle stream) {
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < dim; ++k) outer *= in.sizes[k];
  for (int k = dim + 1; k < in.ndim; ++k) inner *= in.sizes[k];
  const int64_t size = in.ndim == 0 ? 1 : in.sizes[dim];
  const int64_t n = index.numel();
  const int64_t total = outer * n * inner;
  if (total == 0) return absl::OkStatus();
  IndexSelectKernel<<<BlocksFor(total), kThreads, 0,
                      static_cast<cudaStream_t>(stream)>>>(
      static_cast<const char*>(in.data), index.ptr<const int64_t>(),
      static_cast<char*>(out.data), outer, size, n, inner, ItemSize(in.dtype),
      bad);
  return LaunchStatus("index_select kernel");
}

absl::Status Gather(const StridedView& in, int dim, const StridedView& index,
                    const StridedView& out, int64_t* bad, StreamHandle stream) {
  const int64_t total = index.numel();
  if (total == 0) return absl::OkStatus();
  const int64_t size = in.ndim == 0 ? 1 : in.sizes[dim];
  GatherKernel<<<BlocksFor(total), kThreads, 0,
                 static_cast<cudaStream_t>(stream)>>>(
      static_cast<const char*>(in.data), MakeDims(index, in), dim, size,
      index.ptr<const int64_t>(), static_cast<char*>(out.data), total,
      ItemSize(in.dtype), bad);
  return LaunchStatus("gather kernel");
}

// Calls f(T{}) for the dtypes scatter_add's and scatter_reduce's atomics take
// (float32, float64, int64, int32); false for any other.
template <typename F>
bool WithAccumulatingType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
      f(float{});
      return true;
    case DType::kFloat64:
      f(double{});
      return true;
    case DType::kInt64:
      f(int64_t{});
      return true;
    case DType::kInt32:
      f(int32_t{});
      return true;
    default:
      return false;
  }
}

absl::Status Scatter(const StridedView& out, int dim, const StridedView& index,
                     const StridedView& src, bool add, int64_t* bad,
                     StreamHandle stream) {
  const int64_t total = index.numel();
  if (total == 0) return absl::OkStatus();
  const int64_t size = out.ndim == 0 ? 1 : out.sizes[dim];
  const Dims d = MakeDims(index, out), sd = MakeDims(index, src);
  auto s = static_cast<cudaStream_t>(stream);
  auto set = [&](auto tag) {
    using T = decltype(tag);
    ScatterKernel<T, false><<<BlocksFor(total), kThreads, 0, s>>>(
        out.ptr<T>(), d, dim, size, index.ptr<const int64_t>(),
        src.ptr<const T>(), sd, total, bad);
  };
  auto accumulate = [&](auto tag) {
    using T = decltype(tag);
    ScatterKernel<T, true><<<BlocksFor(total), kThreads, 0, s>>>(
        out.ptr<T>(), d, dim, size, index.ptr<const int64_t>(),
        src.ptr<const T>(), sd, total, bad);
  };
  auto launch = [&](auto tag) { add ? accumulate(tag) : set(tag); };
  if (!WithAccumulatingType(out.dtype, launch)) {
    if (add) {
      return absl::UnimplementedError(absl::StrCat(
          "scatter_add on cuda: unsupported dtype ", DTypeName(out.dtype)));
    }
    switch (ItemSize(out.dtype)) {
      case 1:
        set(uint8_t{});
        break;
      case 2:
        set(uint16_t{});
        break;
      default:
        return absl::UnimplementedError(absl::StrCat(
            "scatter on cuda: unsupported dtype ", DTypeName(out.dtype)));
    }
  }
  return LaunchStatus("scatter kernel");
}

absl::Status ScatterReduce(const StridedView& out, int dim,
                           const StridedView& index, const StridedView& src,
                           ReduceOp op, bool include_self, int64_t* count,
                           int64_t* bad, StreamHandle stream) {
  const int64_t total = index.numel();
  if (total == 0) return absl::OkStatus();
  const int64_t size = out.ndim == 0 ? 1 : out.sizes[dim];
  const int64_t n = out.numel();
  const Dims d = MakeDims(index, out), sd = MakeDims(index, src);
  auto s = static_cast<cudaStream_t>(stream);
  if (op == ReduceOp::kMean) {
    TD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(count, 0, n * sizeof(int64_t), s));
  }
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    const int64_t* idx = index.ptr<const int64_t>();
    if (!include_self) {
      ScatterFillKernel<T><<<BlocksFor(total), kThreads, 0, s>>>(
          out.ptr<T>(), d, dim, size, idx, total, ReduceIdentity<T>(op));
    }
    ScatterReduceKernel<T><<<BlocksFor(total), kThreads, 0, s>>>(
        out.ptr<T>(), d, dim, size, idx, src.ptr<const T>(), sd, total, op,
        op == ReduceOp::kMean ? count : nullptr, bad);
    if (op == ReduceOp::kMean) {
      ScatterMeanKernel<T><<<BlocksFor(n), kThreads, 0, s>>>(
          out.ptr<T>(), count, n, include_self);
    }
  };
  if (!WithAccumulatingType(out.dtype, launch)) {
    return absl::UnimplementedError(absl::StrCat(
        "scatter_reduce on cuda: unsupported dtype ", DTypeName(out.dtype),
        " (float32, float64, int32, int64; half types compute in float32)"));
  }
  return LaunchStatus("scatter_reduce kernel");
}

}  // namespace cuda
}  // namespace tensord

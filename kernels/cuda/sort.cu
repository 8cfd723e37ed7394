// CUDA sort, cumulative scans and multinomial sampling (sort.h).
//
// Sort: each row's elements become unsigned keys whose ascending order is
// cpu::Sort's order (NaN above every number, -0.0 tied with 0.0, bits
// inverted for descending), sorted with their positions by cub's radix
// sort, which is stable; values are then gathered from the input by the
// sorted positions (NaN payloads and the sign of zero survive).
// Scans: one block per row, a cub block scan per tile of kThreads elements
// with the running total carried between tiles. Multinomial: multinomial.cu;
// cummax/cummin, logcumsumexp, mode and searchsorted: scan.cu.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dim_layout.cuh"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/sort.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cuda {
namespace {

template <typename T>
constexpr int KeyBits() {
  return std::is_same_v<T, bool> ? 8 : static_cast<int>(sizeof(T) * 8);
}

// The key of x in the low KeyBits<T>() bits: unsigned order = cpu::Sort's.
template <typename T>
__device__ __forceinline__ uint64_t OrderKey(T x) {
  if constexpr (std::is_same_v<T, float>) {
    if (x != x) return 0xFFFFFFFFull;  // +inf's key is 0xFF800000
    const uint32_t b = __float_as_uint(x == 0.0f ? 0.0f : x);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  } else if constexpr (std::is_same_v<T, double>) {
    if (x != x) return ~0ull;
    const uint64_t b =
        static_cast<uint64_t>(__double_as_longlong(x == 0.0 ? 0.0 : x));
    return (b & (1ull << 63)) ? ~b : (b | (1ull << 63));
  } else if constexpr (std::is_signed_v<T>) {
    constexpr int kBits = KeyBits<T>();
    constexpr uint64_t kMask = kBits == 64 ? ~0ull : (1ull << kBits) - 1;
    return (static_cast<uint64_t>(static_cast<int64_t>(x)) ^
            (1ull << (kBits - 1))) &
           kMask;
  } else {  // uint8_t, bool
    return static_cast<uint64_t>(x);
  }
}

// Rows [first, first + rows) as `rows` segments of keys and positions.
template <typename T>
__global__ void MakeKeys(const T* x, Layout l, int64_t first, int64_t n,
                         uint64_t flip, uint64_t* keys, int64_t* pos) {
  TD_GRID_STRIDE(e, n) {
    const int64_t k = e % l.size;
    keys[e] = OrderKey(x[At(l, first + e / l.size, k)]) ^ flip;
    pos[e] = k;
  }
}

__global__ void RowOffsets(int* offsets, int64_t rows, int64_t size) {
  TD_GRID_STRIDE(r, rows + 1) offsets[r] = static_cast<int>(r * size);
}

template <typename T>
__global__ void WriteSorted(const T* x, Layout l, int64_t first, int64_t n,
                            const int64_t* pos, T* values, int64_t* indices) {
  TD_GRID_STRIDE(e, n) {
    const int64_t slice = first + e / l.size;
    const int64_t dst = At(l, slice, e % l.size);
    values[dst] = x[At(l, slice, pos[e])];
    indices[dst] = pos[e];
  }
}

// Bump allocation of 256-byte aligned pieces from one workspace.
struct Carve {
  char* base;
  size_t used = 0;
  template <typename T>
  T* Take(size_t count) {
    T* p = reinterpret_cast<T*>(base + used);
    used += (count * sizeof(T) + 255) / 256 * 256;
    return p;
  }
};

// Rows of at least this many elements are sorted one at a time by the
// device-wide sort (cub's segmented sort gives a segment one block, and
// counts elements in int; the device-wide sort takes int64 counts).
constexpr int64_t kLongRow = int64_t{1} << 16;

template <typename T>
absl::Status SortTyped(const T* x, const Layout& l, bool descending, T* values,
                       int64_t* indices, const WorkspaceFn& workspace,
                       cudaStream_t s) {
  const int64_t rows = l.outer * l.inner;
  const bool long_rows = l.size >= kLongRow;
  // Rows per batch: the segmented sort counts elements in int.
  const int64_t batch =
      long_rows ? 1 : std::min<int64_t>(rows, INT_MAX / l.size);
  const int64_t items = batch * l.size;
  constexpr int kBits = KeyBits<T>();
  const uint64_t flip =
      descending ? (kBits == 64 ? ~0ull : (1ull << kBits) - 1) : 0;
  size_t cub_bytes = 0;
  if (long_rows) {
    TD_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(
        nullptr, cub_bytes, static_cast<const uint64_t*>(nullptr),
        static_cast<uint64_t*>(nullptr), static_cast<const int64_t*>(nullptr),
        static_cast<int64_t*>(nullptr), items, 0, kBits, s));
  } else {
    TD_CUDA_RETURN_IF_ERROR(cub::DeviceSegmentedRadixSort::SortPairs(
        nullptr, cub_bytes, static_cast<const uint64_t*>(nullptr),
        static_cast<uint64_t*>(nullptr), static_cast<const int64_t*>(nullptr),
        static_cast<int64_t*>(nullptr), static_cast<int>(items),
        static_cast<int>(batch), static_cast<const int*>(nullptr),
        static_cast<const int*>(nullptr), 0, kBits, s));
  }
  const size_t pad = 256;
  const size_t total = 4 * (items * sizeof(uint64_t) + pad) +
                       (batch + 1) * sizeof(int) + pad + cub_bytes + pad;
  TD_ASSIGN_OR_RETURN(void* scratch, workspace(total));
  Carve c{static_cast<char*>(scratch)};
  uint64_t* keys_in = c.Take<uint64_t>(items);
  uint64_t* keys_out = c.Take<uint64_t>(items);
  int64_t* pos_in = c.Take<int64_t>(items);
  int64_t* pos_out = c.Take<int64_t>(items);
  int* offsets = c.Take<int>(batch + 1);
  void* cub_temp = c.Take<char>(cub_bytes);
  for (int64_t first = 0; first < rows; first += batch) {
    const int64_t n_rows = std::min(batch, rows - first);
    const int64_t n = n_rows * l.size;
    MakeKeys<T><<<BlocksFor(n), kThreads, 0, s>>>(x, l, first, n, flip, keys_in,
                                                  pos_in);
    TD_RETURN_IF_ERROR(LaunchStatus("sort keys kernel"));
    size_t bytes = cub_bytes;
    if (long_rows) {
      TD_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(
          cub_temp, bytes, keys_in, keys_out, pos_in, pos_out, n, 0, kBits, s));
    } else {
      RowOffsets<<<BlocksFor(n_rows + 1), kThreads, 0, s>>>(offsets, n_rows,
                                                            l.size);
      TD_RETURN_IF_ERROR(LaunchStatus("sort offsets kernel"));
      TD_CUDA_RETURN_IF_ERROR(cub::DeviceSegmentedRadixSort::SortPairs(
          cub_temp, bytes, keys_in, keys_out, pos_in, pos_out,
          static_cast<int>(n), static_cast<int>(n_rows), offsets, offsets + 1,
          0, kBits, s));
    }
    WriteSorted<T><<<BlocksFor(n), kThreads, 0, s>>>(x, l, first, n, pos_out,
                                                     values, indices);
    TD_RETURN_IF_ERROR(LaunchStatus("sort output kernel"));
  }
  return absl::OkStatus();
}

// Scans compute in C: the float type itself, uint64 for integers (wrapping
// as the CPU's narrowing stores do), int 0/1 for bool (or/and).
template <typename T>
using ScanT = std::conditional_t<
    std::is_floating_point_v<T>, T,
    std::conditional_t<std::is_same_v<T, bool>, int, uint64_t>>;

template <typename C>
struct ScanOp {
  bool product;
  __device__ __forceinline__ C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, int>) {  // bool
      return product ? (a & b) : (a | b);
    } else {
      return product ? a * b : a + b;
    }
  }
};

template <typename C>
struct CarryIn {  // cub's block prefix callback: the total of earlier tiles
  C running;
  ScanOp<C> op;
  __device__ C operator()(C tile_total) {
    const C before = running;
    running = op(running, tile_total);
    return before;
  }
};

template <typename T>
__device__ __forceinline__ ScanT<T> ToScan(T x) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return static_cast<uint64_t>(static_cast<int64_t>(x));
  } else {
    return static_cast<ScanT<T>>(x);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    ScanKernel(const T* x, Layout l, bool product, T* y) {
  using C = ScanT<T>;
  using BlockScan = cub::BlockScan<C, kThreads>;
  __shared__ typename BlockScan::TempStorage temp;
  const ScanOp<C> op{product};
  const C identity = product ? C(1) : C(0);
  const int64_t rows = l.outer * l.inner;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    CarryIn<C> carry{identity, op};
    for (int64_t tile = 0; tile < l.size; tile += kThreads) {
      const int64_t k = tile + threadIdx.x;
      C v = k < l.size ? ToScan(x[At(l, row, k)]) : identity;
      BlockScan(temp).InclusiveScan(v, v, op, carry);
      if (k < l.size) y[At(l, row, k)] = static_cast<T>(v);
      __syncthreads();  // temp is reused by the next tile
    }
  }
}

}  // namespace

absl::Status Sort(const StridedView& in, int dim, bool descending,
                  const StridedView& values, const StridedView& indices,
                  const WorkspaceFn& workspace, StreamHandle stream) {
  const Layout l = Around(in, dim);
  if (in.numel() == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH(
      in.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "sort on cuda: unsupported dtype ", DTypeName(in.dtype))),
      return SortTyped<scalar_t>(in.ptr<const scalar_t>(), l, descending,
                                 values.ptr<scalar_t>(), indices.ptr<int64_t>(),
                                 workspace, s));
  return absl::OkStatus();
}

absl::Status CumScan(const StridedView& in, int dim, bool product,
                     const StridedView& out, StreamHandle stream) {
  const Layout l = Around(in, dim);
  const int64_t rows = l.outer * l.inner;
  if (out.numel() == 0) return absl::OkStatus();
  const int blocks = static_cast<int>(std::min<int64_t>(rows, 65535 * 8));
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH(out.dtype,
                   return absl::UnimplementedError(absl::StrCat(
                       product ? "cumprod" : "cumsum",
                       " on cuda: unsupported dtype ", DTypeName(out.dtype))),
                   ScanKernel<scalar_t>
                   <<<blocks, kThreads, 0, s>>>(in.ptr<const scalar_t>(), l,
                                                product, out.ptr<scalar_t>()));
  return LaunchStatus(product ? "cumprod kernel" : "cumsum kernel");
}

}  // namespace cuda
}  // namespace tensord

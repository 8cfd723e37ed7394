// Device-side building blocks shared by the .cu files (nvcc only): strided
// offset calculation with dimension coalescing, launch shapes, dtype
// dispatch, conversions through float for half types, the general
// elementwise launch (LaunchMap).
//
// Note [CUDA indexing]: element indices and offsets are int64_t everywhere
// (tensors may exceed 2^31 elements); loops are grid-stride so any size runs
// with a bounded grid. Contiguous operands take a path without div/mod.
#ifndef TENSORD_KERNELS_CUDA_LOOPS_CUH_
#define TENSORD_KERNELS_CUDA_LOOPS_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "absl/status/status.h"
#include "kernels/cuda/cuda_check.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

inline constexpr int kThreads = 256;

// Blocks for `n` elements at `per_thread` each, capped for grid-stride loops.
inline int BlocksFor(int64_t n, int per_thread = 1) {
  const int64_t work = kThreads * static_cast<int64_t>(per_thread);
  const int64_t blocks = (n + work - 1) / work;
  return static_cast<int>(
      blocks < 1 ? 1 : (blocks > 65535 * 4 ? 65535 * 4 : blocks));
}

#define TD_GRID_STRIDE(i, n)                                            \
  for (int64_t i =                                                      \
           blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; \
       i < (n); i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// Sizes plus the strides of N operands over one iteration space, with
// adjacent dimensions merged where every operand allows it (fewer div/mod).
template <int N>
struct OffsetCalc {
  int ndim = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[N][kMaxDims];

  __device__ __forceinline__ void Offsets(int64_t linear,
                                          int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t idx = linear % sizes[d];
      linear /= sizes[d];
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += idx * strides[k][d];
    }
  }
};

// Views must share sizes (broadcast operands carry stride 0).
template <int N>
OffsetCalc<N> MakeOffsetCalc(const StridedView* const (&views)[N]) {
  OffsetCalc<N> c;
  const StridedView& ref = *views[0];
  for (int d = 0; d < ref.ndim; ++d) {
    if (ref.sizes[d] == 1) continue;  // size-1 dims do not move any offset
    // Merge with the previous kept dim when, for every operand,
    // stride_prev == stride_d * size_d.
    bool merge = c.ndim > 0;
    for (int k = 0; k < N && merge; ++k) {
      merge = c.strides[k][c.ndim - 1] == views[k]->strides[d] * ref.sizes[d];
    }
    if (merge) {
      c.sizes[c.ndim - 1] *= ref.sizes[d];
      for (int k = 0; k < N; ++k)
        c.strides[k][c.ndim - 1] = views[k]->strides[d];
    } else {
      c.sizes[c.ndim] = ref.sizes[d];
      for (int k = 0; k < N; ++k) c.strides[k][c.ndim] = views[k]->strides[d];
      ++c.ndim;
    }
  }
  return c;
}

inline bool AllContiguous(std::initializer_list<const StridedView*> views) {
  for (const StridedView* v : views) {
    if (!v->is_contiguous()) return false;
  }
  return true;
}

// Arithmetic type: half types compute in float.
template <typename T>
struct Acc {
  using type = T;
};
template <>
struct Acc<__half> {
  using type = float;
};
template <>
struct Acc<__nv_bfloat16> {
  using type = float;
};

template <typename T>
inline constexpr bool kIsFloat =
    std::is_floating_point_v<T> || std::is_same_v<T, __half> ||
    std::is_same_v<T, __nv_bfloat16>;

template <typename T>
__device__ __forceinline__ double ToDouble(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return static_cast<double>(__half2float(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return static_cast<double>(__bfloat162float(v));
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
__device__ __forceinline__ T FromDouble(double v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __double2half(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else {
    return static_cast<T>(v);
  }
}

// A loaded element: integers keep all 64 bits, floats their value.
struct Value {
  double f;
  int64_t i;
  bool is_int;
};

__device__ __forceinline__ Value Load(const void* base, DType d, int64_t off) {
  switch (d) {
    case DType::kFloat32:
      return {static_cast<const float*>(base)[off], 0, false};
    case DType::kFloat64:
      return {static_cast<const double*>(base)[off], 0, false};
    case DType::kFloat16:
      return {__half2float(static_cast<const __half*>(base)[off]), 0, false};
    case DType::kBFloat16:
      return {__bfloat162float(static_cast<const __nv_bfloat16*>(base)[off]), 0,
              false};
    case DType::kInt64:
      return {0, static_cast<const int64_t*>(base)[off], true};
    case DType::kInt32:
      return {0, static_cast<const int32_t*>(base)[off], true};
    case DType::kInt8:
      return {0, static_cast<const int8_t*>(base)[off], true};
    case DType::kUInt8:
      return {0, static_cast<const uint8_t*>(base)[off], true};
    default:  // kBool
      return {0, static_cast<const bool*>(base)[off] ? 1 : 0, true};
  }
}

template <typename T>
__device__ __forceinline__ T AsInt(const Value& v) {
  return v.is_int ? static_cast<T>(v.i) : static_cast<T>(v.f);
}

__device__ __forceinline__ void Store(void* base, DType d, int64_t off,
                                      const Value& v) {
  const double f = v.is_int ? static_cast<double>(v.i) : v.f;
  switch (d) {
    case DType::kFloat32:
      static_cast<float*>(base)[off] = static_cast<float>(f);
      break;
    case DType::kFloat64:
      static_cast<double*>(base)[off] = f;
      break;
    case DType::kFloat16:
      static_cast<__half*>(base)[off] = __double2half(f);
      break;
    case DType::kBFloat16:
      static_cast<__nv_bfloat16*>(base)[off] =
          __float2bfloat16_rn(static_cast<float>(f));
      break;
    case DType::kInt64:
      static_cast<int64_t*>(base)[off] = AsInt<int64_t>(v);
      break;
    case DType::kInt32:
      static_cast<int32_t*>(base)[off] =
          static_cast<int32_t>(AsInt<int64_t>(v));
      break;
    case DType::kInt8:
      static_cast<int8_t*>(base)[off] = static_cast<int8_t>(AsInt<int64_t>(v));
      break;
    case DType::kUInt8:
      static_cast<uint8_t*>(base)[off] =
          static_cast<uint8_t>(AsInt<int64_t>(v));
      break;
    default:  // kBool
      static_cast<bool*>(base)[off] = v.is_int ? v.i != 0 : v.f != 0.0;
      break;
  }
}

// Note [Native half kernels] (elementwise.cu): conversions between a half
// type and the float it computes in.
template <typename H>
__device__ __forceinline__ float HalfToFloat(H x) {
  if constexpr (std::is_same_v<H, __half>) {
    return __half2float(x);
  } else {
    return __bfloat162float(x);
  }
}
template <typename H>
__device__ __forceinline__ H FloatToHalf(float x) {
  if constexpr (std::is_same_v<H, __half>) {
    return __float2half_rn(x);
  } else {
    return __float2bfloat16_rn(x);
  }
}
// The value an element computes with: float for the half types (Note
// [Native half kernels]), the element itself otherwise.
template <typename T>
__device__ __forceinline__ auto Computed(T x) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return HalfToFloat(x);
  } else {
    return x;
  }
}
template <typename T, typename C>
__device__ __forceinline__ T Stored(C x) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return FloatToHalf<T>(x);
  } else {
    return x;
  }
}

// The general elementwise launch: `f(off)` with one offset per operand of
// `views` (the first one's sizes), contiguous or through OffsetCalc.
template <int N, typename F>
__global__ void MapStrided(int64_t n, OffsetCalc<N> calc, F f) {
  TD_GRID_STRIDE(i, n) {
    int64_t off[N];
    calc.Offsets(i, off);
    f(off);
  }
}

template <int N, typename F>
__global__ void MapContiguous(int64_t n, F f) {
  TD_GRID_STRIDE(i, n) {
    int64_t off[N];
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = i;
    f(off);
  }
}

template <int N, typename F>
absl::Status LaunchMap(const StridedView* const (&views)[N], F f,
                       StreamHandle stream, const char* name) {
  const int64_t n = views[0]->numel();
  if (n == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  bool contiguous = true;
  for (int k = 0; k < N; ++k) contiguous &= views[k]->is_contiguous();
  if (contiguous) {
    MapContiguous<N><<<BlocksFor(n, 4), kThreads, 0, s>>>(n, f);
  } else {
    MapStrided<N>
        <<<BlocksFor(n, 4), kThreads, 0, s>>>(n, MakeOffsetCalc<N>(views), f);
  }
  return LaunchStatus(name);
}

}  // namespace cuda
}  // namespace tensord

// Calls BODY with `scalar_t` bound to the C++ type of dtype D, for the
// computing dtypes (no half types: kernels that take them add their own
// cases, Note [Native half kernels] in elementwise.cu; for the rest the
// runtime computes in float32, Note [Half compute] in runtime/ops/
// dispatch.cc). DEFAULT runs otherwise.
#define TD_CUDA_DISPATCH(D, DEFAULT, ...) \
  switch (D) {                            \
    case ::tensord::DType::kFloat32: {    \
      using scalar_t = float;             \
      __VA_ARGS__;                        \
    } break;                              \
    case ::tensord::DType::kFloat64: {    \
      using scalar_t = double;            \
      __VA_ARGS__;                        \
    } break;                              \
    case ::tensord::DType::kInt64: {      \
      using scalar_t = int64_t;           \
      __VA_ARGS__;                        \
    } break;                              \
    case ::tensord::DType::kInt32: {      \
      using scalar_t = int32_t;           \
      __VA_ARGS__;                        \
    } break;                              \
    case ::tensord::DType::kInt8: {       \
      using scalar_t = int8_t;            \
      __VA_ARGS__;                        \
    } break;                              \
    case ::tensord::DType::kUInt8: {      \
      using scalar_t = uint8_t;           \
      __VA_ARGS__;                        \
    } break;                              \
    case ::tensord::DType::kBool: {       \
      using scalar_t = bool;              \
      __VA_ARGS__;                        \
    } break;                              \
    default:                              \
      DEFAULT;                            \
  }

#define TD_CUDA_DISPATCH_FLOAT(D, DEFAULT, ...) \
  switch (D) {                                  \
    case ::tensord::DType::kFloat32: {          \
      using scalar_t = float;                   \
      __VA_ARGS__;                              \
    } break;                                    \
    case ::tensord::DType::kFloat64: {          \
      using scalar_t = double;                  \
      __VA_ARGS__;                              \
    } break;                                    \
    default:                                    \
      DEFAULT;                                  \
  }

#endif  // TENSORD_KERNELS_CUDA_LOOPS_CUH_

// Softmax on CUDA (nn.h). Rows along the softmax dim are strided by
// `inner`; one block per (outer, inner) row when the dim is long (block
// reductions for the max and the sum), one thread per row when it is short
// or when inner > 1 keeps neighbouring threads on neighbouring addresses.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/nn.h"

namespace tensord {
namespace cuda {
namespace {

constexpr int kRowThreads = 256;

template <typename T>
__device__ T BlockAll(T v, bool is_max) {
  __shared__ T shared[kRowThreads / 32];
  for (int o = 16; o > 0; o >>= 1) {
    const T other = __shfl_xor_sync(~0u, v, o);
    v = is_max ? (other > v ? other : v) : v + other;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T r = shared[0];
  for (int w = 1; w < kRowThreads / 32; ++w) {
    r = is_max ? (shared[w] > r ? shared[w] : r) : r + shared[w];
  }
  __syncthreads();
  return r;
}

// One block per row (inner == 1, long rows).
template <typename T>
__global__ void SoftmaxRows(const T* __restrict__ in, T* __restrict__ out,
                            int64_t rows, int64_t dim, bool log) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = in + r * dim;
    T* y = out + r * dim;
    T m = -INFINITY;
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      m = x[j] > m || x[j] != x[j] ? x[j] : m;
    }
    m = BlockAll(m, true);
    T sum = 0;
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      sum += exp(x[j] - m);
    }
    sum = BlockAll(sum, false);
    const T log_sum = ::log(sum);
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
      y[j] = log ? x[j] - m - log_sum : exp(x[j] - m) / sum;
    }
  }
}

// One thread per (outer, inner) row.
template <typename T>
__global__ void SoftmaxStrided(const T* __restrict__ in, T* __restrict__ out,
                               int64_t outer, int64_t dim, int64_t inner,
                               bool log) {
  TD_GRID_STRIDE(r, outer * inner) {
    const int64_t o = r / inner, i = r % inner;
    const T* x = in + o * dim * inner + i;
    T* y = out + o * dim * inner + i;
    T m = -INFINITY;
    for (int64_t j = 0; j < dim; ++j) {
      const T v = x[j * inner];
      m = v > m || v != v ? v : m;
    }
    T sum = 0;
    for (int64_t j = 0; j < dim; ++j) sum += exp(x[j * inner] - m);
    const T log_sum = ::log(sum);
    for (int64_t j = 0; j < dim; ++j) {
      const T v = x[j * inner];
      y[j * inner] = log ? v - m - log_sum : exp(v - m) / sum;
    }
  }
}

}  // namespace

absl::Status Softmax(const StridedView& in, int64_t outer, int64_t dim,
                     int64_t inner, bool log, const StridedView& out,
                     StreamHandle stream) {
  if (outer * dim * inner == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      in.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "softmax on cuda: unsupported dtype ", DTypeName(in.dtype))),
      {
        if (inner == 1 && dim >= 128) {
          const int64_t rows = outer;
          const int blocks =
              static_cast<int>(rows < 65535 * 8 ? rows : 65535 * 8);
          SoftmaxRows<scalar_t><<<blocks, kRowThreads, 0, s>>>(
              in.ptr<const scalar_t>(), out.ptr<scalar_t>(), rows, dim, log);
        } else {
          SoftmaxStrided<scalar_t>
              <<<BlocksFor(outer * inner), kThreads, 0, s>>>(
                  in.ptr<const scalar_t>(), out.ptr<scalar_t>(), outer, dim,
                  inner, log);
        }
      });
  return LaunchStatus("softmax kernel");
}

}  // namespace cuda
}  // namespace tensord

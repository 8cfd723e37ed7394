// Philox4x32-10 on CUDA (random.h): the same rounds, constants and
// conversions as kernels/cpu/random.cc, one thread per counter.
#include <cuda_runtime.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/random.h"

namespace tensord {
namespace cuda {
namespace {

__device__ __forceinline__ void Philox(uint64_t counter, uint64_t key,
                                       uint32_t (&c)[4]) {
  c[0] = static_cast<uint32_t>(counter);
  c[1] = static_cast<uint32_t>(counter >> 32);
  c[2] = 0;
  c[3] = 0;
  uint32_t k0 = static_cast<uint32_t>(key),
           k1 = static_cast<uint32_t>(key >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57} * c[2];
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1;
    c[1] = static_cast<uint32_t>(p1);
    c[3] = static_cast<uint32_t>(p0);
    c[0] = n0;
    c[2] = n2;
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
}

// Uniform in (0, 1]: never 0, so log() in Box-Muller is finite.
__device__ __forceinline__ double ToUnit(uint32_t x) {
  return (static_cast<double>(x) + 1.0) / 4294967296.0;
}

template <typename T>
__global__ void RandomKernel(T* out, int64_t n, uint64_t seed, uint64_t offset,
                             bool normal) {
  const int64_t blocks = (n + 3) / 4;
  TD_GRID_STRIDE(blk, blocks) {
    uint32_t r[4];
    Philox(offset + static_cast<uint64_t>(blk), seed, r);
    double v[4];
    if (!normal) {
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = ToUnit(r[i]) - 0x1p-32;
    } else {
#pragma unroll
      for (int pair = 0; pair < 2; ++pair) {
        const double u1 = ToUnit(r[2 * pair]), u2 = ToUnit(r[2 * pair + 1]);
        const double radius = sqrt(-2.0 * log(u1));
        v[2 * pair] = radius * cos(2 * M_PI * u2);
        v[2 * pair + 1] = radius * sin(2 * M_PI * u2);
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (blk * 4 + i < n) out[blk * 4 + i] = static_cast<T>(v[i]);
    }
  }
}

}  // namespace

absl::Status FillRandom(Distribution dist, uint64_t seed, uint64_t offset,
                        const StridedView& out, StreamHandle stream) {
  if (!out.is_contiguous()) {
    return absl::InternalError("FillRandom needs a contiguous output");
  }
  const int64_t n = out.numel();
  if (n == 0) return absl::OkStatus();
  auto s = static_cast<cudaStream_t>(stream);
  TD_CUDA_DISPATCH_FLOAT(
      out.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "random on cuda: unsupported dtype ", DTypeName(out.dtype))),
      RandomKernel<scalar_t><<<BlocksFor((n + 3) / 4), kThreads, 0, s>>>(
          out.ptr<scalar_t>(), n, seed, offset, dist == Distribution::kNormal));
  return LaunchStatus("random kernel");
}

}  // namespace cuda
}  // namespace tensord

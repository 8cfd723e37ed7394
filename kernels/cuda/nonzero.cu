// CUDA nonzero_static (nonzero.h): one pass marks the nonzero elements, cub's
// DeviceSelect::Flagged compacts their flat positions (in order) and counts
// them on the GPU, and a last pass writes each output row: the coordinates
// of the r-th position while r < count, fill_value after.
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <cub/device/device_select.cuh>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/nonzero.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cuda {
namespace {

// NaN compares unequal to zero: it counts as nonzero, as in PyTorch.
__global__ void MarkNonzero(const void* in, DType dtype, int64_t n,
                            uint8_t* flags) {
  TD_GRID_STRIDE(i, n) {
    const Value v = Load(in, dtype, i);
    flags[i] = v.is_int ? v.i != 0 : v.f != 0.0;
  }
}

struct Sizes {
  int ndim;
  int64_t sizes[kMaxDims];
};

__global__ void WriteCoordinates(const int64_t* positions, const int64_t* count,
                                 Sizes s, int64_t rows, int64_t fill,
                                 int64_t* out) {
  TD_GRID_STRIDE(r, rows) {
    int64_t* row = out + r * s.ndim;
    if (r < *count) {
      int64_t p = positions[r];
      for (int d = s.ndim - 1; d >= 0; --d) {
        row[d] = p % s.sizes[d];
        p /= s.sizes[d];
      }
    } else {
      for (int d = 0; d < s.ndim; ++d) row[d] = fill;
    }
  }
}

size_t AlignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

absl::Status NonzeroStatic(const StridedView& in, int64_t fill_value,
                           const StridedView& out, const WorkspaceFn& workspace,
                           StreamHandle stream) {
  const int64_t n = in.numel();
  const int64_t rows = out.sizes[0];
  if (rows == 0) return absl::OkStatus();
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  thrust::counting_iterator<int64_t> positions(0);
  size_t cub_bytes = 0;
  TD_CUDA_RETURN_IF_ERROR(cub::DeviceSelect::Flagged(
      nullptr, cub_bytes, positions, static_cast<const uint8_t*>(nullptr),
      static_cast<int64_t*>(nullptr), static_cast<int64_t*>(nullptr), n, s));
  // One block: [count | flags | selected positions | cub scratch].
  const size_t flags_at = AlignUp(sizeof(int64_t));
  const size_t selected_at = flags_at + AlignUp(static_cast<size_t>(n));
  const size_t cub_at = selected_at + AlignUp(sizeof(int64_t) * n);
  TD_ASSIGN_OR_RETURN(void* scratch, workspace(cub_at + cub_bytes));
  char* base = static_cast<char*>(scratch);
  auto* count = reinterpret_cast<int64_t*>(base);
  auto* flags = reinterpret_cast<uint8_t*>(base + flags_at);
  auto* selected = reinterpret_cast<int64_t*>(base + selected_at);
  TD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(count, 0, sizeof(int64_t), s));
  if (n > 0) {
    MarkNonzero<<<BlocksFor(n), kThreads, 0, s>>>(in.data, in.dtype, n, flags);
    TD_RETURN_IF_ERROR(LaunchStatus("MarkNonzero"));
    TD_CUDA_RETURN_IF_ERROR(cub::DeviceSelect::Flagged(
        base + cub_at, cub_bytes, positions, flags, selected, count, n, s));
  }
  Sizes sizes{in.ndim, {}};
  for (int d = 0; d < in.ndim; ++d) sizes.sizes[d] = in.sizes[d];
  WriteCoordinates<<<BlocksFor(rows), kThreads, 0, s>>>(
      selected, count, sizes, rows, fill_value, out.ptr<int64_t>());
  return LaunchStatus("WriteCoordinates");
}

}  // namespace cuda
}  // namespace tensord

// The CUDA kernel wrappers of the op table, attached by op name when the
// table is built (as the backward formulas are: derivatives.h), so the rows
// in *_ops.cc stay device-neutral and a CPU-only build attaches none.
#ifndef TENSORD_RUNTIME_OPS_CUDA_KERNELS_H_
#define TENSORD_RUNTIME_OPS_CUDA_KERNELS_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/reduce.h"
#include "runtime/ops/op_def.h"

namespace tensord {

using CudaKernelMap = absl::flat_hash_map<std::string, KernelFn>;

// Sets OpDef::cuda of every row that has a CUDA wrapper (none without
// TENSORD_WITH_CUDA).
void AttachCudaKernels(std::vector<OpDef>* ops);

// Whether this binary has CUDA kernels at all.
bool CudaKernelsBuilt();

// One per family file (runtime/ops/cuda_*.cc); each adds its wrappers.
void AddCudaPointwiseKernels(CudaKernelMap* map);
void AddCudaNnKernels(CudaKernelMap* map);
// The fused training rows: layer/batch norm, cross entropy (cuda_norm.cc).
void AddCudaNormKernels(CudaKernelMap* map);
void AddCudaConvKernels(CudaKernelMap* map);
void AddCudaSortKernels(CudaKernelMap* map);
// The rows whose CUDA wrappers pass float16/bfloat16 operands to kernels
// that read and write them natively, computing in float (Note [Native half
// kernels], kernels/cuda/elementwise.cu): AttachCudaKernels sets their
// OpDef::native_half_cuda, so the dispatcher makes no float32 copies.
void AddCudaNativeHalfRows(absl::flat_hash_set<std::string>* rows);

// Rows whose wrapper serves both devices (reductions: the same
// preparation, then the kernel of `out`'s device) call these
// (cuda_reduce.cc).
absl::Status DeviceReduce(const Tensor& out, const OpContext& ctx,
                          cpu::ReduceOp op, const StridedView& in,
                          const bool* reduced, const StridedView& out_view);
absl::Status DeviceReduceStat(const Tensor& out, const OpContext& ctx,
                              cpu::StatOp op, const StridedView& in,
                              const bool* reduced, double param,
                              const StridedView& out_view);

// The matmul rows' device switch (cuda_linalg.cc): cuBLAS on CUDA, with
// operands that cuBLAS cannot read made contiguous first.
absl::Status DeviceBatchedMatmul(const Tensor& out, const OpContext& ctx,
                                 const StridedView& a, const StridedView& b,
                                 const StridedView& out_view);

// The index rows' device switch (cuda_index.cc). On CUDA an out-of-range
// index is found by the kernel and read back before returning (the op then
// waits for the GPU: a bad index must be a clean INVALID_ARGUMENT).
absl::Status DeviceIndexSelect(const Tensor& out, const OpContext& ctx,
                               const StridedView& in, int dim,
                               const StridedView& index,
                               const StridedView& out_view);
absl::Status DeviceGather(const Tensor& out, const OpContext& ctx,
                          const StridedView& in, int dim,
                          const StridedView& index,
                          const StridedView& out_view);
absl::Status DeviceScatter(const Tensor& out, const OpContext& ctx,
                           const StridedView& out_view, int dim,
                           const StridedView& index, const StridedView& src,
                           bool add);
// scatter_reduce's switch (kernels/cpu/index.h's ScatterReduce): on CUDA
// sums and means are atomic adds (float results vary in their last bits from
// run to run), prod/amax/amin compare-and-swap loops; means count in an int64
// scratch tensor from the caching allocator. `what` names the op in errors.
absl::Status DeviceScatterReduce(const Tensor& out, const OpContext& ctx,
                                 const StridedView& out_view, int dim,
                                 const StridedView& index,
                                 const StridedView& src, ReduceOp op,
                                 bool include_self, const char* what);
// The switches of scan_ops.cc's rows (cuda_sort.cc): kernels/cpu/sort.h's
// kernels or kernels/cuda/sort.h's by `out`'s device; every view
// C-contiguous, `dim` the kernels' (0 for a 0-d input).
absl::Status DeviceCumExtreme(const Tensor& out, const OpContext& ctx,
                              const StridedView& in, int dim, bool max,
                              const StridedView& values,
                              const StridedView& indices);
absl::Status DeviceLogCumSumExp(const Tensor& out, const OpContext& ctx,
                                const StridedView& in, int dim,
                                const StridedView& out_view);
// mode: values/indices are laid out as [outer, 1, inner] around dim. On the
// CPU PyTorch's CPU algorithm (Note [Mode ties] in kernels/cpu/sort.cc); on
// CUDA `in` sorted stably into scratch tensors from the caching allocator,
// then each row's runs (a tie within a value: its last occurrence).
absl::Status DeviceMode(const Tensor& out, const OpContext& ctx,
                        const StridedView& in, int dim,
                        const StridedView& values, const StridedView& indices);
absl::Status DeviceSearchSorted(const Tensor& out, const OpContext& ctx,
                                const StridedView& boundaries,
                                const StridedView& values, bool right,
                                const StridedView& out_view);
// nonzero_static's switch: `in` is C-contiguous; on CUDA the count stays on
// the GPU (no wait), the scratch memory comes from the caching allocator.
absl::Status DeviceNonzeroStatic(const Tensor& out, const OpContext& ctx,
                                 const StridedView& in, int64_t fill_value);

// The distance rows' switch (cuda_distance.cc; kernels/cpu/distance.h and
// histogram.h): C-contiguous operands, out's device picks the kernels.
absl::Status DeviceCdist(const Tensor& out, const OpContext& ctx,
                         const StridedView& x1, const StridedView& x2,
                         double p);
absl::Status DeviceCdistBackward(const Tensor& out, const OpContext& ctx,
                                 const StridedView& grad, const StridedView& x1,
                                 const StridedView& x2, const StridedView& dist,
                                 double p);
absl::Status DevicePdist(const Tensor& out, const OpContext& ctx,
                         const StridedView& x, double p);
absl::Status DevicePdistBackward(const Tensor& out, const OpContext& ctx,
                                 const StridedView& grad, const StridedView& x,
                                 const StridedView& dist, double p);
// histc over [lo, hi] (finite, lo < hi); on CUDA the counts go through an
// int64 scratch tensor from the caching allocator.
absl::Status DeviceHistc(const Tensor& out, const OpContext& ctx,
                         const StridedView& in, double lo, double hi);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_CUDA_KERNELS_H_

// CUDA wrappers for the one-dim rows of sort_ops.cc (attached by name:
// cuda_kernels.h): sort, cumsum, cumprod and multinomial, with the CPU
// rows' preparation (contiguous operands, the scan's cast to the output
// dtype, the generator reservation). argsort, topk and randperm are
// composites over sort, narrow, rand and to, so they run on CUDA through
// these. Scratch memory comes from the device's caching allocator on the
// session's stream.
#include "runtime/ops/cuda_kernels.h"

#if TENSORD_WITH_CUDA
#include <algorithm>

#include "kernels/cuda/random.h"
#include "kernels/cuda/sort.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#endif

namespace tensord {

#if TENSORD_WITH_CUDA
namespace {

using Ins = absl::Span<const Tensor>;

// The row's dim (a 0-d tensor takes dim 0 or -1 and is seen as [1]); the
// row's infer has validated it.
absl::StatusOr<int> KernelDim(const Tensor& t, const Attrs& attrs) {
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), std::max(t.ndim(), 1)));
  return t.ndim() == 0 ? 0 : d;
}

// Workspace from the caching allocator; `keep` holds it until the work is
// enqueued (stream-ordered reuse, as cuda_conv.cc's).
cuda::WorkspaceFn Workspace(Device* device, const OpContext& ctx,
                            Tensor* keep) {
  return [device, &ctx, keep](size_t bytes) -> absl::StatusOr<void*> {
    TD_ASSIGN_OR_RETURN(
        *keep, Tensor::Empty(device, DType::kUInt8,
                             Shape{static_cast<int64_t>(bytes)}, ctx.alloc));
    return keep->data();
  };
}

absl::Status CudaSort(Ins in, Ins out, const Attrs& attrs,
                      const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, KernelDim(in[0], attrs));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  Tensor keep;
  return cuda::Sort(x.view(), d, attrs.Bool("descending"), out[0].view(),
                    out[1].view(), Workspace(out[0].device(), ctx, &keep),
                    ctx.alloc.stream);
}

template <bool kProduct>
absl::Status CudaScan(Ins in, Ins out, const Attrs& attrs,
                      const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, KernelDim(in[0], attrs));
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  TD_ASSIGN_OR_RETURN(x, Contiguous(x, ctx));
  return cuda::CumScan(x.view(), d, kProduct, out[0].view(), ctx.alloc.stream);
}

// The CPU row's uniforms (the same generator reservation and Philox
// counters), so a seeded session draws the same categories on either
// device. The check words are read back: invalid weights (data) must be a
// clean INVALID_ARGUMENT, so the op waits for the GPU, as the index rows do.
absl::Status CudaMultinomial(Ins in, Ins out, const Attrs& attrs,
                             const OpContext& ctx) {
  Device* device = out[0].device();
  TD_ASSIGN_OR_RETURN(Tensor p, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor u, Tensor::Empty(device, DType::kFloat64,
                                              out[0].shape(), ctx.alloc));
  const uint64_t offset = ctx.generator->Reserve(u.numel());
  TD_RETURN_IF_ERROR(cuda::FillRandom(cuda::Distribution::kUniform,
                                      ctx.generator->seed(), offset, u.view(),
                                      ctx.alloc.stream));
  TD_ASSIGN_OR_RETURN(Tensor flag,
                      Tensor::Empty(device, DType::kInt64,
                                    Shape{cuda::kMultinomialWords}, ctx.alloc));
  auto* words = static_cast<int64_t*>(flag.data());
  Tensor keep;
  TD_RETURN_IF_ERROR(cuda::Multinomial(
      p.view(), u.view(), attrs.Bool("replacement"), out[0].view(), words,
      Workspace(device, ctx, &keep), ctx.alloc.stream));
  int64_t host[cuda::kMultinomialWords] = {};
  TD_RETURN_IF_ERROR(
      device->CopyToHost(host, words, sizeof(host), ctx.alloc.stream));
  return cuda::MultinomialStatus(host, attrs.Int("num_samples"));
}

}  // namespace

void AddCudaSortKernels(CudaKernelMap* map) {
  (*map)["sort"] = CudaSort;
  (*map)["cumsum"] = CudaScan<false>;
  (*map)["cumprod"] = CudaScan<true>;
  (*map)["multinomial"] = CudaMultinomial;
}

#else
void AddCudaSortKernels(CudaKernelMap*) {}
#endif

}  // namespace tensord

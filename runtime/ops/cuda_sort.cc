// CUDA wrappers for the one-dim rows of sort_ops.cc (attached by name:
// cuda_kernels.h): sort, cumsum, cumprod and multinomial, with the CPU
// rows' preparation (contiguous operands, the scan's cast to the output
// dtype, the generator reservation). argsort, topk and randperm are
// composites over sort, narrow, rand and to, so they run on CUDA through
// these. Then the device switches of scan_ops.cc's rows (cummax/cummin,
// logcumsumexp, mode, searchsorted), which serve both devices. Scratch
// memory comes from the device's caching allocator on the session's stream.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/sort.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/cuda_kernels.h"

#if TENSORD_WITH_CUDA
#include <algorithm>

#include "kernels/cuda/random.h"
#include "kernels/cuda/sort.h"
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

namespace {

bool OnCpu(const Tensor& out) {
  return out.device()->kind() == DeviceKind::kCpu;
}

// A row's switch reaches CUDA only from a CUDA build (the rows attach no
// CUDA kernel otherwise).
[[maybe_unused]] absl::Status NoCuda(const Tensor& out) {
  return absl::UnimplementedError(absl::StrCat(
      "the one-dim scans on ", out.device()->name(), " need a CUDA build"));
}

}  // namespace

absl::Status DeviceCumExtreme(const Tensor& out, const OpContext& ctx,
                              const StridedView& in, int dim, bool max,
                              const StridedView& values,
                              const StridedView& indices) {
  if (OnCpu(out)) return cpu::CumExtreme(in, dim, max, values, indices);
#if TENSORD_WITH_CUDA
  return cuda::CumExtreme(in, dim, max, values, indices, ctx.alloc.stream);
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

absl::Status DeviceLogCumSumExp(const Tensor& out, const OpContext& ctx,
                                const StridedView& in, int dim,
                                const StridedView& out_view) {
  if (OnCpu(out)) return cpu::LogCumSumExp(in, dim, out_view);
#if TENSORD_WITH_CUDA
  return cuda::LogCumSumExp(in, dim, out_view, ctx.alloc.stream);
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

absl::Status DeviceMode(const Tensor& out, const OpContext& ctx,
                        const StridedView& in, int dim,
                        const StridedView& values, const StridedView& indices) {
  if (OnCpu(out)) return cpu::Mode(in, dim, values, indices);
#if TENSORD_WITH_CUDA
  // The sorted copies and cub's scratch live until the work is enqueued
  // (the caching allocator's reuse is ordered on the session's stream).
  Device* device = out.device();
  const Shape shape(in.sizes, in.sizes + in.ndim);
  TD_ASSIGN_OR_RETURN(Tensor sorted,
                      Tensor::Empty(device, in.dtype, shape, ctx.alloc));
  TD_ASSIGN_OR_RETURN(Tensor pos,
                      Tensor::Empty(device, DType::kInt64, shape, ctx.alloc));
  Tensor keep;
  TD_RETURN_IF_ERROR(cuda::Sort(in, dim, false, sorted.view(), pos.view(),
                                Workspace(device, ctx, &keep),
                                ctx.alloc.stream));
  return cuda::ModeOfSorted(sorted.view(), pos.view(), dim, values, indices,
                            ctx.alloc.stream);
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

absl::Status DeviceSearchSorted(const Tensor& out, const OpContext& ctx,
                                const StridedView& boundaries,
                                const StridedView& values, bool right,
                                const StridedView& out_view) {
  if (OnCpu(out)) {
    return cpu::SearchSorted(boundaries, values, right, out_view);
  }
#if TENSORD_WITH_CUDA
  return cuda::SearchSorted(boundaries, values, right, out_view,
                            ctx.alloc.stream);
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

}  // namespace tensord

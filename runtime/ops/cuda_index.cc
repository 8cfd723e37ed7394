// The index rows' device switch: kernels/cpu/index.h or kernels/cuda/index.h.
// On CUDA the kernels flag an out-of-range index in a device word that is
// read back here (a value read: the executor waits for this op).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/index.h"
#include "kernels/cpu/nonzero.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/cuda_kernels.h"

#if TENSORD_WITH_CUDA
#include "kernels/cuda/index.h"
#include "kernels/cuda/nonzero.h"
#endif

namespace tensord {
namespace {

#if TENSORD_WITH_CUDA
// Runs `launch(bad)` with a fresh device flag, then reports a bad index
// (prefixed with `what`, the op, when given).
template <typename F>
absl::Status WithBadIndexCheck(const Tensor& out, const OpContext& ctx,
                               int64_t size, int dim, F launch,
                               const char* what = nullptr) {
  Device* device = out.device();
  TD_ASSIGN_OR_RETURN(
      Tensor flag, Tensor::Empty(device, DType::kInt64, Shape{1}, ctx.alloc));
  auto* bad = static_cast<int64_t*>(flag.data());
  TD_RETURN_IF_ERROR(cuda::ResetBadIndex(bad, ctx.alloc.stream));
  TD_RETURN_IF_ERROR(launch(bad));
  int64_t host = -1;
  TD_RETURN_IF_ERROR(
      device->CopyToHost(&host, bad, sizeof(host), ctx.alloc.stream));
  if (host != -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        what == nullptr ? "" : what, what == nullptr ? "" : "(): ", "index ",
        host, " is out of bounds for dimension ", dim, " with size ", size));
  }
  return absl::OkStatus();
}
#endif

#if !TENSORD_WITH_CUDA
absl::Status NoCuda(const Tensor& out) {
  return absl::UnimplementedError(
      absl::StrCat("index ops on ", out.device()->name(), " need CUDA"));
}
#endif

}  // namespace

absl::Status DeviceIndexSelect(const Tensor& out, const OpContext& ctx,
                               const StridedView& in, int dim,
                               const StridedView& index,
                               const StridedView& out_view) {
  if (out.device()->kind() == DeviceKind::kCpu) {
    return cpu::IndexSelect(in, dim, index, out_view);
  }
#if TENSORD_WITH_CUDA
  const int64_t size = in.ndim == 0 ? 1 : in.sizes[dim];
  return WithBadIndexCheck(out, ctx, size, dim, [&](int64_t* bad) {
    return cuda::IndexSelect(in, dim, index, out_view, bad, ctx.alloc.stream);
  });
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

absl::Status DeviceGather(const Tensor& out, const OpContext& ctx,
                          const StridedView& in, int dim,
                          const StridedView& index,
                          const StridedView& out_view) {
  if (out.device()->kind() == DeviceKind::kCpu) {
    return cpu::Gather(in, dim, index, out_view);
  }
#if TENSORD_WITH_CUDA
  return WithBadIndexCheck(out, ctx, in.sizes[dim], dim, [&](int64_t* bad) {
    return cuda::Gather(in, dim, index, out_view, bad, ctx.alloc.stream);
  });
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

absl::Status DeviceScatter(const Tensor& out, const OpContext& ctx,
                           const StridedView& out_view, int dim,
                           const StridedView& index, const StridedView& src,
                           bool add) {
  if (out.device()->kind() == DeviceKind::kCpu) {
    return cpu::Scatter(out_view, dim, index, src, add);
  }
#if TENSORD_WITH_CUDA
  return WithBadIndexCheck(out, ctx, out_view.sizes[dim], dim,
                           [&](int64_t* bad) {
                             return cuda::Scatter(out_view, dim, index, src,
                                                  add, bad, ctx.alloc.stream);
                           });
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

absl::Status DeviceScatterReduce(const Tensor& out, const OpContext& ctx,
                                 const StridedView& out_view, int dim,
                                 const StridedView& index,
                                 const StridedView& src, ReduceOp op,
                                 bool include_self, const char* what) {
  if (out.device()->kind() == DeviceKind::kCpu) {
    return cpu::ScatterReduce(out_view, dim, index, src, op, include_self,
                              what);
  }
#if TENSORD_WITH_CUDA
  // The count scratch lives until the work is enqueued (the caching
  // allocator's reuse is ordered on the session's stream).
  Tensor count;
  if (op == ReduceOp::kMean) {
    TD_ASSIGN_OR_RETURN(count,
                        Tensor::Empty(out.device(), DType::kInt64,
                                      Shape{out_view.numel()}, ctx.alloc));
  }
  auto* count_data =
      op == ReduceOp::kMean ? static_cast<int64_t*>(count.data()) : nullptr;
  return WithBadIndexCheck(
      out, ctx, out_view.sizes[dim], dim,
      [&](int64_t* bad) {
        return cuda::ScatterReduce(out_view, dim, index, src, op, include_self,
                                   count_data, bad, ctx.alloc.stream);
      },
      what);
#else
  (void)ctx;
  (void)what;
  return NoCuda(out);
#endif
}

absl::Status DeviceNonzeroStatic(const Tensor& out, const OpContext& ctx,
                                 const StridedView& in, int64_t fill_value) {
  if (out.device()->kind() == DeviceKind::kCpu) {
    return cpu::NonzeroStatic(in, fill_value, out.view());
  }
#if TENSORD_WITH_CUDA
  // The scratch tensor lives until the work is enqueued: the caching
  // allocator's reuse is ordered on the session's stream.
  Tensor keep;
  auto workspace = [&](size_t bytes) -> absl::StatusOr<void*> {
    TD_ASSIGN_OR_RETURN(
        keep, Tensor::Empty(out.device(), DType::kUInt8,
                            Shape{static_cast<int64_t>(bytes)}, ctx.alloc));
    return keep.data();
  };
  return cuda::NonzeroStatic(in, fill_value, out.view(), workspace,
                             ctx.alloc.stream);
#else
  (void)ctx;
  return NoCuda(out);
#endif
}

}  // namespace tensord

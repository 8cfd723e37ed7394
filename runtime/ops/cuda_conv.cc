// CUDA wrappers for conv2d and its gradient rows through cuDNN
// (kernels/cuda/conv.h) and for the 2-d pools and their gradients
// (kernels/cuda/nn.h, max_pool.h; the adaptive max pools, the 3-d
// indices backward and the 3-d average pools, avg_pool3d.h, too), attached
// by name. The rows' infer
// functions have validated the call and sized the output; the geometry is
// read back from the attributes and the tensors' shapes here. Workspace
// comes from the device's caching allocator on the session's stream.
#include "runtime/ops/cuda_kernels.h"

#if TENSORD_WITH_CUDA
#include <tuple>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/avg_pool3d.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/max_pool.h"
#include "kernels/cuda/nn.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/pool_geometry.h"
#endif

namespace tensord {

#if TENSORD_WITH_CUDA
namespace {

using Ins = absl::Span<const Tensor>;

std::pair<int64_t, int64_t> Pair(const Attrs& attrs, const char* name,
                                 int64_t fallback) {
  const auto& v = attrs.Ints(name);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  return {fallback, fallback};
}

// Geometry from input [n, c, h, w], weight [o, c/g, kh, kw], output
// [n, o, oh, ow] shapes and the conv attributes.
cuda::ConvShape Geometry(const Shape& x, const Shape& w, const Shape& y,
                         const Attrs& attrs, const OpContext& ctx) {
  cuda::ConvShape s;
  s.allow_tf32 = ctx.allow_tf32;
  s.n = x[0], s.c = x[1], s.h = x[2], s.w = x[3];
  s.o = w[0], s.groups = attrs.Int("groups");
  s.kh = w[2], s.kw = w[3];
  std::tie(s.sh, s.sw) = Pair(attrs, "stride", 1);
  std::tie(s.ph, s.pw) = Pair(attrs, "padding", 0);
  std::tie(s.dh, s.dw) = Pair(attrs, "dilation", 1);
  s.oh = y[2], s.ow = y[3];
  return s;
}

// Workspace from the caching allocator; `keep` holds it until the work is
// enqueued.
cuda::WorkspaceFn Workspace(Device* device, const OpContext& ctx,
                            Tensor* keep) {
  return [device, &ctx, keep](size_t bytes) -> absl::StatusOr<void*> {
    TD_ASSIGN_OR_RETURN(
        *keep, Tensor::Empty(device, DType::kUInt8,
                             Shape{static_cast<int64_t>(bytes)}, ctx.alloc));
    return keep->data();
  };
}

absl::Status CudaConv(Ins in, Ins out, const Attrs& attrs,
                      const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor w, Contiguous(in[1], ctx));
  Tensor bias;
  StridedView bias_view;
  if (in.size() == 3) {
    TD_ASSIGN_OR_RETURN(bias, Contiguous(in[2], ctx));
    bias_view = bias.view();
  }
  Tensor keep;
  return cuda::Conv2dForward(
      Geometry(x.shape(), w.shape(), out[0].shape(), attrs, ctx), x.view(),
      w.view(), in.size() == 3 ? &bias_view : nullptr, out[0].view(),
      Workspace(out[0].device(), ctx, &keep), ctx.alloc.stream);
}

// conv2d_backward_input(grad, weight): out is the input gradient.
absl::Status CudaConvBackwardInput(Ins in, Ins out, const Attrs& attrs,
                                   const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor dy, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor w, Contiguous(in[1], ctx));
  Tensor keep;
  return cuda::Conv2dBackwardData(
      Geometry(out[0].shape(), w.shape(), dy.shape(), attrs, ctx), dy.view(),
      w.view(), out[0].view(), Workspace(out[0].device(), ctx, &keep),
      ctx.alloc.stream);
}

// conv2d_backward_weight(grad, input): out is the weight gradient.
absl::Status CudaConvBackwardWeight(Ins in, Ins out, const Attrs& attrs,
                                    const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor dy, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[1], ctx));
  Tensor keep;
  return cuda::Conv2dBackwardFilter(
      Geometry(x.shape(), out[0].shape(), dy.shape(), attrs, ctx), dy.view(),
      x.view(), out[0].view(), Workspace(out[0].device(), ctx, &keep),
      ctx.alloc.stream);
}

// The window of a pool row; oh/ow from the pooled tensor's shape.
cuda::PoolWindow Window(const Attrs& attrs, bool is_max, const Shape& pooled) {
  cuda::PoolWindow w;
  std::tie(w.kh, w.kw) = Pair(attrs, "kernel_size", 1);
  w.sh = w.kh, w.sw = w.kw;
  if (!attrs.Ints("stride").empty())
    std::tie(w.sh, w.sw) = Pair(attrs, "stride", 1);
  std::tie(w.ph, w.pw) = Pair(attrs, "padding", 0);
  w.dh = w.dw = 1;
  if (is_max) std::tie(w.dh, w.dw) = Pair(attrs, "dilation", 1);
  w.oh = pooled[pooled.size() - 2];
  w.ow = pooled[pooled.size() - 1];
  return w;
}

template <int kKind>  // 0 max, 1 avg, 2 adaptive avg
absl::Status CudaPool(Ins in, Ins out, const Attrs& attrs,
                      const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  auto s = ctx.alloc.stream;
  if (kKind == 2) return cuda::AdaptiveAvgPool2d(As4d(x), As4d(out[0]), s);
  const cuda::PoolWindow w = Window(attrs, kKind == 0, out[0].shape());
  if (kKind == 0) return cuda::MaxPool2d(As4d(x), w, As4d(out[0]), s);
  return cuda::AvgPool2d(As4d(x), w, attrs.Bool("count_include_pad"),
                         attrs.Int("divisor_override"), As4d(out[0]), s);
}

// *_pool2d_backward(grad, input): out is the input gradient.
template <int kKind>
absl::Status CudaPoolBackward(Ins in, Ins out, const Attrs& attrs,
                              const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor grad, Contiguous(in[0], ctx));
  auto s = ctx.alloc.stream;
  if (kKind == 2) {
    return cuda::AdaptiveAvgPool2dBackward(As4d(grad), As4d(out[0]), s);
  }
  const cuda::PoolWindow w = Window(attrs, kKind == 0, grad.shape());
  if (kKind == 0) {
    TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[1], ctx));
    return cuda::MaxPool2dBackward(As4d(grad), As4d(x), w, As4d(out[0]), s);
  }
  return cuda::AvgPool2dBackward(As4d(grad), w, attrs.Bool("count_include_pad"),
                                 attrs.Int("divisor_override"), As4d(out[0]),
                                 s);
}

// max_pool2d_with_indices(self): the window checked and sized as on the CPU
// (max_pool_ops.cc); out: values, indices.
absl::Status CudaMaxPoolWithIndices(Ins in, Ins out, const Attrs& attrs,
                                    const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(
      cpu::Window2d w,
      PlanPool2d(in[0], attrs, /*max_pool=*/true, "max_pool2d_with_indices"));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  const cuda::PoolWindow cw{w.kh, w.kw, w.sh, w.sw, w.ph,
                            w.pw, w.dh, w.dw, w.oh, w.ow};
  return cuda::MaxPool2dWithIndices(As4d(x), cw, As4d(out[0]), As4d(out[1]),
                                    ctx.alloc.stream);
}

// max_pool2d_with_indices_backward(grad_output, self, indices): out is the
// input gradient; self gave its shape only.
absl::Status CudaMaxPoolWithIndicesBackward(Ins in, Ins out, const Attrs&,
                                            const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor grad, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor indices, Contiguous(in[2], ctx));
  return cuda::MaxPool2dWithIndicesBackward(As4d(grad), As4d(indices),
                                            As4d(out[0]), ctx.alloc.stream);
}

// adaptive_max_pool{2,3}d(self): out: values, indices (adaptive_max_pool_
// ops.cc sized them).
template <int kSpatial>
absl::Status CudaAdaptiveMaxPool(Ins in, Ins out, const Attrs&,
                                 const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  return cuda::AdaptiveMaxPool3d(AsVolumes(x, kSpatial),
                                 AsVolumes(out[0], kSpatial),
                                 AsVolumes(out[1], kSpatial), ctx.alloc.stream);
}

// adaptive_max_pool{2,3}d_backward and max_pool3d_with_indices_backward
// (grad_output, self, indices): max_pool2d_with_indices_backward's kernel on
// flattened planes.
template <int kSpatial>
absl::Status CudaIndicesBackward(Ins in, Ins out, const Attrs&,
                                 const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor grad, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor indices, Contiguous(in[2], ctx));
  return cuda::MaxPool2dWithIndicesBackward(
      AsFlatPlanes(grad, kSpatial), AsFlatPlanes(indices, kSpatial),
      AsFlatPlanes(out[0], kSpatial), ctx.alloc.stream);
}

cuda::AvgWindow3d CudaWindow(const cpu::AvgWindow3d& w) {
  cuda::AvgWindow3d c;
  c.adaptive = w.adaptive;
  for (int d = 0; d < 3; ++d) {
    c.kernel[d] = w.kernel[d], c.stride[d] = w.stride[d], c.pad[d] = w.pad[d];
  }
  c.count_include_pad = w.count_include_pad;
  c.divisor_override = w.divisor_override;
  return c;
}

// avg_pool3d / adaptive_avg_pool3d(self): the window as on the CPU
// (avg_pool3d_ops.cc).
template <bool kAdaptive>
absl::Status CudaAvgPool3d(Ins in, Ins out, const Attrs& attrs,
                           const OpContext& ctx) {
  cpu::AvgWindow3d w;
  w.adaptive = kAdaptive;
  if (!kAdaptive) {
    TD_ASSIGN_OR_RETURN(AvgPool3dPlan plan,
                        PlanAvgPool3d(in[0], attrs, "avg_pool3d"));
    w = plan.window;
  }
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  return cuda::AvgPool3d(AsVolumes(x, 3), CudaWindow(w), AsVolumes(out[0], 3),
                         ctx.alloc.stream);
}

// avg_pool3d_backward / adaptive_avg_pool3d_backward(grad_output, self).
template <bool kAdaptive>
absl::Status CudaAvgPool3dBackward(Ins in, Ins out, const Attrs& attrs,
                                   const OpContext& ctx) {
  cpu::AvgWindow3d w;
  w.adaptive = kAdaptive;
  if (!kAdaptive) {
    TD_ASSIGN_OR_RETURN(AvgPool3dPlan plan,
                        PlanAvgPool3d(in[1], attrs, "avg_pool3d_backward"));
    w = plan.window;
  }
  TD_ASSIGN_OR_RETURN(Tensor grad, Contiguous(in[0], ctx));
  return cuda::AvgPool3dBackward(AsVolumes(grad, 3), CudaWindow(w),
                                 AsVolumes(out[0], 3), ctx.alloc.stream);
}

}  // namespace

void AddCudaConvKernels(CudaKernelMap* map) {
  (*map)["conv2d"] = CudaConv;
  (*map)["conv2d_backward_input"] = CudaConvBackwardInput;
  (*map)["conv2d_backward_weight"] = CudaConvBackwardWeight;
  (*map)["max_pool2d"] = CudaPool<0>;
  (*map)["avg_pool2d"] = CudaPool<1>;
  (*map)["adaptive_avg_pool2d"] = CudaPool<2>;
  (*map)["max_pool2d_backward"] = CudaPoolBackward<0>;
  (*map)["avg_pool2d_backward"] = CudaPoolBackward<1>;
  (*map)["adaptive_avg_pool2d_backward"] = CudaPoolBackward<2>;
  (*map)["max_pool2d_with_indices"] = CudaMaxPoolWithIndices;
  (*map)["max_pool2d_with_indices_backward"] = CudaMaxPoolWithIndicesBackward;
  (*map)["adaptive_max_pool2d"] = CudaAdaptiveMaxPool<2>;
  (*map)["adaptive_max_pool3d"] = CudaAdaptiveMaxPool<3>;
  (*map)["adaptive_max_pool2d_backward"] = CudaIndicesBackward<2>;
  (*map)["adaptive_max_pool3d_backward"] = CudaIndicesBackward<3>;
  (*map)["max_pool3d_with_indices_backward"] = CudaIndicesBackward<3>;
  (*map)["avg_pool3d"] = CudaAvgPool3d<false>;
  (*map)["adaptive_avg_pool3d"] = CudaAvgPool3d<true>;
  (*map)["avg_pool3d_backward"] = CudaAvgPool3dBackward<false>;
  (*map)["adaptive_avg_pool3d_backward"] = CudaAvgPool3dBackward<true>;
}

#else
void AddCudaConvKernels(CudaKernelMap*) {}
#endif

}  // namespace tensord

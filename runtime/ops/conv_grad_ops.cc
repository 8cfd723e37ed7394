// The gradients of conv2d and the 2-d pools as ops (internal to backward
// formulas, but catalog ops like any other). CPU: oneDNN for float32 conv
// (kernels/cpu/onednn_conv.h), else im2col + OpenBLAS GEMM + col2im; plane-
// parallel loops for the pools
// (kernels/cpu/conv_grad.h), on contiguous float32/float64 data. Half inputs
// compute in float32 (Note [Half compute]). Not differentiable themselves (no
// double backward of conv).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/conv_grad.h"
#include "kernels/cpu/onednn_conv.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"
#include "runtime/ops/pool_geometry.h"  // As4d

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using I = std::vector<int64_t>;

struct Win {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
};

int64_t At(const I& v, size_t i, int64_t fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v[i];
}

Win WindowFrom(const Attrs& attrs, int64_t kh, int64_t kw) {
  Win w;
  w.kh = kh, w.kw = kw;
  const I& s = attrs.Ints("stride");
  w.sh = At(s, 0, kh), w.sw = At(s, 1, kw);
  w.ph = At(attrs.Ints("padding"), 0, 0),
  w.pw = At(attrs.Ints("padding"), 1, 0);
  if (attrs.Has("dilation")) {
    w.dh = At(attrs.Ints("dilation"), 0, 1);
    w.dw = At(attrs.Ints("dilation"), 1, 1);
  }
  return w;
}

// Output 0: a float tensor of `shape` with grad's dtype.
absl::Status CheckGradInputs(absl::Span<const Tensor> in, int rank_lo,
                             int rank_hi) {
  for (const Tensor& t : in) {
    TD_RETURN_IF_ERROR(RequireFloating(t, "a pooling/conv gradient"));
    if (t.ndim() < rank_lo || t.ndim() > rank_hi) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected a ", rank_lo, "-d to ", rank_hi,
                       "-d tensor, got shape ", ShapeToString(t.shape())));
    }
  }
  if (in[0].dtype() != in[1].dtype()) {
    return absl::InvalidArgumentError("grad and input must have one dtype");
  }
  return absl::OkStatus();
}

Specs InferSized(absl::Span<const Tensor> in, const Attrs& attrs,
                 const char* size_attr) {
  TD_RETURN_IF_ERROR(CheckGradInputs(in, 4, 4));
  TD_ASSIGN_OR_RETURN(Shape s, ShapeAttr(attrs, size_attr, in[0].dtype()));
  if (s.size() != 4 || s[0] * 0 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(size_attr, " must have 4 sizes"));
  }
  const int64_t groups = attrs.Int("groups");
  if (groups < 1) return absl::InvalidArgumentError("groups must be >= 1");
  return std::vector<TensorSpec>{{in[0].dtype(), s, in[0].device()}};
}

Specs InferConvInput(absl::Span<const Tensor> in, const Attrs& attrs,
                     const OpContext&) {
  TD_ASSIGN_OR_RETURN(auto specs, InferSized(in, attrs, "input_size"));
  const Shape& s = specs[0].shape;
  const int64_t g = attrs.Int("groups");
  if (s[1] != in[1].shape()[1] * g || in[0].shape()[1] != in[1].shape()[0] ||
      in[0].shape()[0] != s[0] || in[1].shape()[0] % g != 0) {
    return absl::InvalidArgumentError("conv2d_backward_input: shapes disagree");
  }
  return specs;
}

Specs InferConvWeight(absl::Span<const Tensor> in, const Attrs& attrs,
                      const OpContext&) {
  TD_ASSIGN_OR_RETURN(auto specs, InferSized(in, attrs, "weight_size"));
  const Shape& s = specs[0].shape;
  const int64_t g = attrs.Int("groups");
  if (in[1].shape()[1] != s[1] * g || in[0].shape()[1] != s[0] ||
      in[0].shape()[0] != in[1].shape()[0] || s[0] % g != 0) {
    return absl::InvalidArgumentError(
        "conv2d_backward_weight: shapes disagree");
  }
  return specs;
}

// The conv geometry, from grad [N, O, OH, OW], image [N, C, H, W] and
// weight [O, C/g, KH, KW] shapes.
cpu::ConvGeometry Geometry(const Shape& grad, const Shape& image,
                           const Shape& weight, const Attrs& attrs) {
  const Win w = WindowFrom(attrs, 1, 1);
  cpu::ConvGeometry d;
  d.n = image[0], d.c = image[1], d.h = image[2], d.w = image[3];
  d.o = grad[1];
  d.groups = attrs.Int("groups");
  d.win = {weight[2], weight[3], w.sh, w.sw,    w.ph,
           w.pw,      w.dh,      w.dw, grad[2], grad[3]};
  return d;
}

// oneDNN (float32) or im2col + GEMM + col2im (kernels/cpu/conv_grad.h), with
// a scratch block from the session's allocator.
template <bool kWeight>
absl::Status CpuConvGrad(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs& attrs,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor g, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor other, Contiguous(in[1], ctx));
  const cpu::ConvGeometry d =
      kWeight ? Geometry(g.shape(), other.shape(), out[0].shape(), attrs)
              : Geometry(g.shape(), out[0].shape(), other.shape(), attrs);
  // float32: oneDNN's kernels; a geometry oneDNN refuses (some dilated ones,
  // conv_transpose2d's output_padding) takes im2col + GEMM below.
  if (cpu::OnednnConvApplies(g.dtype(), d)) {
    if (!kWeight) {
      if (cpu::OnednnConv2dBackwardInput(g.view(), other.view(), d,
                                         out[0].view())
              .ok()) {
        return absl::OkStatus();
      }
    } else {
      TD_ASSIGN_OR_RETURN(
          Tensor ws,
          Tensor::Empty(g.device(), g.dtype(),
                        {cpu::OnednnConvGradWorkspace(d)}, ctx.alloc));
      if (cpu::OnednnConv2dBackwardWeight(g.view(), other.view(), d, ws.view(),
                                          out[0].view())
              .ok()) {
        return absl::OkStatus();
      }
    }
  }
  TD_ASSIGN_OR_RETURN(Tensor ws,
                      Tensor::Empty(g.device(), g.dtype(),
                                    {cpu::ConvGradWorkspace(d)}, ctx.alloc));
  if (kWeight) {
    return cpu::Conv2dBackwardWeight(g.view(), other.view(), d, ws.view(),
                                     out[0].view());
  }
  return cpu::Conv2dBackwardInput(g.view(), other.view(), d, ws.view(),
                                  out[0].view());
}

// ------------------------------------------------------------------ pools
enum class Pool { kMax, kAvg, kAdaptive };

template <Pool kPool>
Specs InferPoolGrad(absl::Span<const Tensor> in, const Attrs&,
                    const OpContext&) {
  TD_RETURN_IF_ERROR(CheckGradInputs(in, 3, 4));
  if (in[0].ndim() != in[1].ndim()) {
    return absl::InvalidArgumentError("grad and input ranks differ");
  }
  // max_pool2d_backward's optional third input: the forward's output.
  if (in.size() == 3 &&
      (in[2].shape() != in[0].shape() || in[2].dtype() != in[0].dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_pool2d_backward: output must be max_pool2d's output, shaped as "
        "grad ",
        ShapeToString(in[0].shape()), " with its dtype; got ",
        ShapeToString(in[2].shape()), " ", DTypeName(in[2].dtype())));
  }
  return std::vector<TensorSpec>{
      {in[1].dtype(), in[1].shape(), in[1].device()}};
}

template <Pool kPool>
absl::Status CpuPoolGrad(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs& attrs,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor g, Contiguous(in[0], ctx));
  const StridedView gv = As4d(g), gi = As4d(out[0]);
  if (kPool == Pool::kAdaptive) return cpu::AdaptiveAvgPool2dBackward(gv, gi);
  const I& k = attrs.Ints("kernel_size");
  const Win w = WindowFrom(attrs, At(k, 0, 1), At(k, 1, 1));
  const cpu::Window2d win{w.kh, w.kw, w.sh, w.sw,        w.ph,
                          w.pw, w.dh, w.dw, gv.sizes[2], gv.sizes[3]};
  if (kPool == Pool::kAvg) {
    return cpu::AvgPool2dBackward(gv, win, attrs.Bool("count_include_pad"),
                                  attrs.Int("divisor_override"), gi);
  }
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[1], ctx));
  if (in.size() < 3) {
    return cpu::MaxPool2dBackward(gv, As4d(x), StridedView{}, win, gi);
  }
  TD_ASSIGN_OR_RETURN(Tensor y, Contiguous(in[2], ctx));
  return cpu::MaxPool2dBackward(gv, As4d(x), As4d(y), win, gi);
}

std::vector<AttrSpec> ConvAttrs(const char* size) {
  return {Required(size, AttrType::kInts),
          Optional("stride", AttrType::kInts, I{1}),
          Optional("padding", AttrType::kInts, I{0}),
          Optional("dilation", AttrType::kInts, I{1}),
          Optional("groups", AttrType::kInt, int64_t{1})};
}

OpDef Internal(OpDef def) {
  def.differentiable = false;
  return def;
}

}  // namespace

std::vector<OpDef> ConvGradOps() {
  std::vector<OpDef> ops;
  OpDef ci =
      Internal(MakeOp("conv2d_backward_input", 2, 2, ConvAttrs("input_size"),
                      "The gradient of conv2d's input from its output "
                      "gradient and weight (used by autograd)."));
  ci.infer = InferConvInput;
  ci.cpu = CpuConvGrad<false>;
  ci.examples = {
      Example({{2, 6, 3, 5}, {6, 2, 3, 3}}, {{"input_size", I{2, 4, 5, 5}},
                                             {"stride", I{2, 1}},
                                             {"padding", I{1}},
                                             {"groups", int64_t{2}}})};
  ops.push_back(std::move(ci));
  OpDef cw =
      Internal(MakeOp("conv2d_backward_weight", 2, 2, ConvAttrs("weight_size"),
                      "The gradient of conv2d's weight from its output "
                      "gradient and input (used by autograd)."));
  cw.infer = InferConvWeight;
  cw.cpu = CpuConvGrad<true>;
  cw.examples = {
      Example({{2, 6, 3, 5}, {2, 4, 5, 5}}, {{"weight_size", I{6, 2, 3, 3}},
                                             {"stride", I{2, 1}},
                                             {"padding", I{1}},
                                             {"groups", int64_t{2}}})};
  ops.push_back(std::move(cw));
  std::vector<AttrSpec> max_attrs, avg_attrs;
  for (const OpDef& def : ConvOps()) {
    if (def.name == "max_pool2d") max_attrs = def.attrs;
    if (def.name == "avg_pool2d") avg_attrs = def.attrs;
  }
  OpDef mb = Internal(MakeOp(
      "max_pool2d_backward", 2, 3, max_attrs,
      "The gradient of max_pool2d's input from the output gradient and input "
      "(used by autograd); an optional third input, max_pool2d's output, "
      "saves recomputing the window maxima (CPU)."));
  mb.infer = InferPoolGrad<Pool::kMax>;
  mb.cpu = CpuPoolGrad<Pool::kMax>;
  // No example with the output: random values are not max_pool2d's output,
  // so CPU (trusting them) and CUDA (recomputing) would disagree in the CUDA
  // consistency test. op_table_test.cc runs that form on a real output.
  mb.examples = {Example({{1, 2, 3, 3}, {1, 2, 5, 5}},
                         {{"kernel_size", I{2}}, {"ceil_mode", true}})};
  ops.push_back(std::move(mb));
  OpDef ab = Internal(MakeOp("avg_pool2d_backward", 2, 2, avg_attrs,
                             "The gradient of avg_pool2d's input from the "
                             "output gradient and input (used by autograd)."));
  ab.infer = InferPoolGrad<Pool::kAvg>;
  ab.cpu = CpuPoolGrad<Pool::kAvg>;
  ab.examples = {
      Example({{1, 2, 3, 3}, {1, 2, 5, 5}},
              {{"kernel_size", I{3}}, {"padding", I{1}}, {"stride", I{2}}}),
      Example({{1, 2, 3, 3}, {1, 2, 5, 5}},
              {{"kernel_size", I{3}},
               {"padding", I{1}},
               {"stride", I{2}},
               {"ceil_mode", true},
               {"divisor_override", int64_t{3}}})};
  ops.push_back(std::move(ab));
  OpDef aa = Internal(MakeOp("adaptive_avg_pool2d_backward", 2, 2, {},
                             "The gradient of adaptive_avg_pool2d's input "
                             "(used by autograd)."));
  aa.infer = InferPoolGrad<Pool::kAdaptive>;
  aa.cpu = CpuPoolGrad<Pool::kAdaptive>;
  aa.examples = {Example({{1, 2, 2, 3}, {1, 2, 5, 7}})};
  ops.push_back(std::move(aa));
  return ops;
}

}  // namespace tensord

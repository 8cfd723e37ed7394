// conv2d (float32: oneDNN, kernels/cpu/onednn_conv.h; float64: im2col + GEMM
// per image and group, kernels/cpu/conv.h), max_pool2d,
// avg_pool2d, adaptive_avg_pool2d on NCHW tensors (pools also take CHW).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/nn.h"
#include "kernels/cpu/onednn_conv.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"
#include "runtime/ops/pool_geometry.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;

struct ConvPlan {
  cpu::Window2d w;
  int64_t n, c, h, wd, o, groups;
};

absl::StatusOr<ConvPlan> PlanConv(absl::Span<const Tensor> in,
                                  const Attrs& attrs) {
  const Tensor &x = in[0], &weight = in[1];
  TD_RETURN_IF_ERROR(RequireDim(x, 4, "conv2d input"));
  TD_RETURN_IF_ERROR(RequireDim(weight, 4, "conv2d weight"));
  TD_RETURN_IF_ERROR(RequireFloating(x, "conv2d"));
  if (weight.dtype() != x.dtype() ||
      (in.size() == 3 && in[2].dtype() != x.dtype())) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv2d: input, weight and bias must have one dtype, got ",
                     DTypeName(x.dtype()), " and ", DTypeName(weight.dtype())));
  }
  ConvPlan p;
  p.n = x.shape()[0], p.c = x.shape()[1], p.h = x.shape()[2],
  p.wd = x.shape()[3];
  p.o = weight.shape()[0];
  p.groups = attrs.Int("groups");
  if (p.groups < 1 || p.c % p.groups != 0 || p.o % p.groups != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv2d: groups=", p.groups, " must divide in_channels (",
                     p.c, ") and out_channels (", p.o, ")"));
  }
  if (weight.shape()[1] * p.groups != p.c) {
    return absl::InvalidArgumentError(absl::StrCat(
        "conv2d: expected input ", ShapeToString(x.shape()), " to have ",
        weight.shape()[1] * p.groups, " channels (weight ",
        ShapeToString(weight.shape()), ", groups=", p.groups, "), but got ",
        p.c, " channels instead"));
  }
  if (in.size() == 3 && (in[2].ndim() != 1 || in[2].shape()[0] != p.o)) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv2d: bias must have shape [", p.o, "], got ",
                     ShapeToString(in[2].shape())));
  }
  TD_ASSIGN_OR_RETURN(auto s, IntPairAttr(attrs, "stride", {1, 1}, 1));
  TD_ASSIGN_OR_RETURN(auto pad, IntPairAttr(attrs, "padding", {0, 0}, 0));
  TD_ASSIGN_OR_RETURN(auto d, IntPairAttr(attrs, "dilation", {1, 1}, 1));
  p.w = {weight.shape()[2], weight.shape()[3], s.first,  s.second, pad.first,
         pad.second,        d.first,           d.second, 0,        0};
  const int64_t eh = d.first * (p.w.kh - 1) + 1,
                ew = d.second * (p.w.kw - 1) + 1;
  p.w.oh = (p.h + 2 * pad.first - eh) / s.first + 1;
  p.w.ow = (p.wd + 2 * pad.second - ew) / s.second + 1;
  if (p.h + 2 * pad.first < eh || p.wd + 2 * pad.second < ew) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv2d: kernel size (", eh, " x ", ew,
                     ") can't be greater than the "
                     "padded input size (",
                     p.h + 2 * pad.first, " x ", p.wd + 2 * pad.second, ")"));
  }
  return p;
}

Specs InferConv(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext&) {
  TD_ASSIGN_OR_RETURN(ConvPlan p, PlanConv(in, attrs));
  Shape out{p.n, p.o, p.w.oh, p.w.ow};
  TD_RETURN_IF_ERROR(CheckShape(out, ItemSize(in[0].dtype())));
  return std::vector<TensorSpec>{{in[0].dtype(), out, in[0].device()}};
}

absl::Status CpuConv(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(ConvPlan p, PlanConv(in, attrs));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor weight, Contiguous(in[1], ctx));
  const cpu::ConvGeometry g{p.n, p.c, p.h, p.wd, p.o, p.groups, p.w};
  // float32: oneDNN's kernels; a geometry oneDNN refuses (some dilated ones)
  // takes im2col + GEMM.
  if (!cpu::OnednnConvApplies(x.dtype(), g) ||
      !cpu::OnednnConv2d(x.view(), weight.view(), g, out[0].view()).ok()) {
    TD_ASSIGN_OR_RETURN(
        Tensor ws, Tensor::Empty(x.device(), x.dtype(), {cpu::ConvWorkspace(g)},
                                 ctx.alloc));
    TD_RETURN_IF_ERROR(
        cpu::Conv2d(x.view(), weight.view(), g, ws.view(), out[0].view()));
  }
  if (in.size() == 3) {
    const Tensor b = in[2].AsStrided(
        {1, p.o, 1, 1}, {0, in[2].strides()[0], 0, 0}, in[2].offset());
    const StridedView o = out[0].view();
    TD_RETURN_IF_ERROR(cpu::Binary(cpu::BinaryOp::kAdd, o,
                                   b.BroadcastView(out[0].shape()), 1.0, o));
  }
  return absl::OkStatus();
}

// Pools: input [N, C, H, W] or [C, H, W] (pool_geometry.h).
template <bool kMax>
absl::StatusOr<cpu::Window2d> PlanPool(const Tensor& x, const Attrs& attrs) {
  return PlanPool2d(x, attrs, /*max_pool=*/kMax,
                    kMax ? "max_pool2d" : "avg_pool2d");
}

template <bool kMax>
Specs InferPool(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext&) {
  TD_ASSIGN_OR_RETURN(cpu::Window2d w, PlanPool<kMax>(in[0], attrs));
  return std::vector<TensorSpec>{
      {in[0].dtype(), PoolShape(in[0], w.oh, w.ow), in[0].device()}};
}

template <bool kMax>
absl::Status CpuPool(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(cpu::Window2d w, PlanPool<kMax>(in[0], attrs));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  if (kMax) return cpu::MaxPool2d(As4d(x), w, As4d(out[0]));
  return cpu::AvgPool2d(As4d(x), w, attrs.Bool("count_include_pad"),
                        attrs.Int("divisor_override"), As4d(out[0]));
}

Specs InferAdaptive(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  TD_RETURN_IF_ERROR(CheckPoolInput(in[0], "adaptive_avg_pool2d"));
  TD_ASSIGN_OR_RETURN(auto o, IntPairAttr(attrs, "output_size", {0, 0}, 0));
  if (attrs.Ints("output_size").empty()) {
    return absl::InvalidArgumentError(
        "adaptive_avg_pool2d: output_size is required");
  }
  return std::vector<TensorSpec>{
      {in[0].dtype(), PoolShape(in[0], o.first, o.second), in[0].device()}};
}

absl::Status CpuAdaptive(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs&,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  return cpu::AdaptiveAvgPool2d(As4d(x), As4d(out[0]));
}

// conv_transpose2d(input [N, C, H, W], weight [C, O/groups, kH, kW][, bias
// [O]]): conv2d's input gradient with input in the output gradient's place,
// sized (H - 1) stride - 2 padding + dilation (kH - 1) + output_padding + 1
// (the rows output_padding adds see no input). Its backward formula
// (derivatives_nn.cc) is conv2d for the input and conv2d's weight gradient.
absl::StatusOr<std::vector<Tensor>> ConvTranspose2d(absl::Span<const Tensor> in,
                                                    const Attrs& attrs,
                                                    const OpContext& ctx) {
  const Tensor &x = in[0], &w = in[1];
  if (x.ndim() != 4 || w.ndim() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "conv_transpose2d(): expected 4-d input and weight, got ",
        ShapeToString(x.shape()), " and ", ShapeToString(w.shape()),
        " (unbatched input: unsqueeze(0) first)"));
  }
  TD_RETURN_IF_ERROR(RequireFloating(x, "conv_transpose2d() input"));
  const int64_t groups = attrs.Int("groups");
  if (groups < 1 || x.shape()[1] != w.shape()[0] || w.shape()[0] % groups) {
    return absl::InvalidArgumentError(absl::StrCat(
        "conv_transpose2d(): input ", ShapeToString(x.shape()), " and weight ",
        ShapeToString(w.shape()), " with groups=", groups,
        ": input channels must equal weight.shape[0], a multiple of groups"));
  }
  TD_ASSIGN_OR_RETURN(auto st, IntPairAttr(attrs, "stride", {1, 1}, 1));
  TD_ASSIGN_OR_RETURN(auto pad, IntPairAttr(attrs, "padding", {0, 0}, 0));
  TD_ASSIGN_OR_RETURN(auto dil, IntPairAttr(attrs, "dilation", {1, 1}, 1));
  TD_ASSIGN_OR_RETURN(auto op, IntPairAttr(attrs, "output_padding", {0, 0}, 0));
  if ((op.first >= st.first && op.first >= dil.first) ||
      (op.second >= st.second && op.second >= dil.second)) {
    return absl::InvalidArgumentError(
        "conv_transpose2d(): output_padding must be smaller than either "
        "stride or dilation");
  }
  const int64_t oh = (x.shape()[2] - 1) * st.first - 2 * pad.first +
                     dil.first * (w.shape()[2] - 1) + op.first + 1;
  const int64_t ow = (x.shape()[3] - 1) * st.second - 2 * pad.second +
                     dil.second * (w.shape()[3] - 1) + op.second + 1;
  if (oh <= 0 || ow <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv_transpose2d(): the output size ", oh, "x", ow,
                     " is too small (input ", ShapeToString(x.shape()),
                     ", weight ", ShapeToString(w.shape()), ")"));
  }
  using I = std::vector<int64_t>;
  const int64_t channels = w.shape()[1] * groups;
  TD_ASSIGN_OR_RETURN(Tensor out,
                      Call1("conv2d_backward_input", {x, w},
                            {{"input_size", I{x.shape()[0], channels, oh, ow}},
                             {"stride", I{st.first, st.second}},
                             {"padding", I{pad.first, pad.second}},
                             {"dilation", I{dil.first, dil.second}},
                             {"groups", groups}},
                            ctx));
  if (in.size() == 3) {
    TD_ASSIGN_OR_RETURN(
        Tensor b,
        Call1("view", {in[2]}, {{"shape", I{1, channels, 1, 1}}}, ctx));
    TD_ASSIGN_OR_RETURN(out, Call1("add", {out, b}, {}, ctx));
  }
  return std::vector<Tensor>{out};
}

AttrSpec Ints(const char* name, std::vector<int64_t> v) {
  return Optional(name, AttrType::kInts, std::move(v));
}

}  // namespace

std::vector<OpDef> ConvOps() {
  using I = std::vector<int64_t>;
  std::vector<OpDef> ops;
  OpDef conv =
      MakeOp("conv2d", 2, 3,
             {Ints("stride", {1}), Ints("padding", {0}), Ints("dilation", {1}),
              Optional("groups", AttrType::kInt, int64_t{1})},
             "2-d convolution of NCHW input with [O, C/groups, kH, kW] "
             "weight and optional bias.");
  conv.infer = InferConv;
  conv.cpu = CpuConv;
  conv.examples = {
      Example({{2, 4, 5, 5}, {6, 2, 3, 3}, {6}},
              {{"stride", I{2, 1}}, {"padding", I{1}}, {"groups", int64_t{2}}}),
      Example({{1, 3, 4, 4}, {2, 3, 1, 1}})};
  ops.push_back(std::move(conv));
  OpDef convt = MakeOp(
      "conv_transpose2d", 2, 3,
      {Ints("stride", {1}), Ints("padding", {0}), Ints("output_padding", {0}),
       Optional("groups", AttrType::kInt, int64_t{1}), Ints("dilation", {1})},
      "2-d transposed convolution of NCHW input with [C, O/groups, kH, kW] "
      "weight and optional bias (conv2d's input gradient).");
  convt.composite = ConvTranspose2d;
  convt.examples = {
      Example({{2, 4, 3, 3}, {4, 3, 3, 3}, {6}}, {{"stride", I{2}},
                                                  {"padding", I{1}},
                                                  {"output_padding", I{1}},
                                                  {"groups", int64_t{2}}}),
      Example({{1, 2, 4, 5}, {2, 3, 2, 2}})};
  ops.push_back(std::move(convt));
  OpDef maxp = MakeOp("max_pool2d", 1, 1, MaxPoolAttrs(),
                      "2-d max pooling (stride defaults to kernel_size); "
                      "max_pool2d_with_indices adds the indices.");
  maxp.infer = InferPool<true>;
  maxp.cpu = CpuPool<true>;
  maxp.examples = {
      Example({{1, 2, 5, 5}}, {{"kernel_size", I{2}}, {"ceil_mode", true}})};
  ops.push_back(std::move(maxp));
  OpDef avgp = MakeOp(
      "avg_pool2d", 1, 1,
      {Required("kernel_size", AttrType::kInts), Ints("stride", {}),
       Ints("padding", {0}), Optional("ceil_mode", AttrType::kBool, false),
       Optional("count_include_pad", AttrType::kBool, true),
       Optional("divisor_override", AttrType::kInt, int64_t{0})},
      "2-d average pooling (stride defaults to kernel_size); a non-zero "
      "divisor_override divides every window's sum instead of its count (0: "
      "none; PyTorch refuses 0); int64 input averages in int64, truncating, "
      "as PyTorch's CPU kernel.");
  avgp.infer = InferPool<false>;
  avgp.cpu = CpuPool<false>;
  avgp.examples = {
      Example({{1, 2, 5, 5}},
              {{"kernel_size", I{3}}, {"padding", I{1}}, {"stride", I{2}}}),
      Example({{1, 2, 5, 5}},
              {{"kernel_size", I{3}}, {"padding", I{1}}, {"stride", I{2}}},
              {DType::kInt64}),
      Example({{2, 6, 5}}, {{"kernel_size", I{3, 2}},
                            {"padding", I{1}},
                            {"ceil_mode", true},
                            {"count_include_pad", false},
                            {"divisor_override", int64_t{-2}}})};
  ops.push_back(std::move(avgp));
  OpDef ada = MakeOp("adaptive_avg_pool2d", 1, 1,
                     {Required("output_size", AttrType::kInts)},
                     "2-d average pooling to a given output size.");
  ada.infer = InferAdaptive;
  ada.cpu = CpuAdaptive;
  ada.examples = {Example({{1, 2, 5, 7}}, {{"output_size", I{2, 3}}})};
  ops.push_back(std::move(ada));
  return ops;
}

}  // namespace tensord

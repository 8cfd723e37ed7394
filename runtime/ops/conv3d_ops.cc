// conv3d on NCDHW tensors and its two gradient rows (float32: oneDNN's 3-d
// primitives, kernels/cpu/onednn_conv.h, Note [oneDNN conv geometry]; float64
// and the geometries oneDNN refuses: direct loops, kernels/cpu/conv3d.h).
// Half inputs compute in float32 (Note [Half compute]). CPU only: the cuDNN
// path (kernels/cuda/conv.cc) is built on 4-d descriptors and a 2-d
// geometry, so the rows are in KnownCpuOnly (known_cpu_only.cc).
// conv_transpose3d is conv3d_backward_input (the PyTorch device's mapping,
// client/python/tensord/torch/_conv3d.py), as conv_transpose2d is.
#include <array>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/conv3d.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/onednn_conv.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using I = std::vector<int64_t>;
using Triple = std::array<int64_t, 3>;

// An ints attribute of 1 or 3 values (`fallback` when empty), each at least
// `min_value`.
absl::StatusOr<Triple> TripleAttr(const Attrs& attrs, const char* name,
                                  int64_t fallback, int64_t min_value) {
  const I& v = attrs.Ints(name);
  Triple t{fallback, fallback, fallback};
  if (v.size() == 1) {
    t = {v[0], v[0], v[0]};
  } else if (v.size() == 3) {
    t = {v[0], v[1], v[2]};
  } else if (!v.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "conv3d: ", name, " must be one int or three, got ", ShapeToString(v)));
  }
  for (int64_t x : t) {
    if (x < min_value) {
      return absl::InvalidArgumentError(
          absl::StrCat("conv3d: ", name, " must be >= ", min_value, ", got ",
                       ShapeToString(v)));
    }
  }
  return t;
}

// The geometry of a conv of `image` [N, C, D, H, W] with `weight`
// [O, C/groups, kD, kH, kW]; the output sizes are PyTorch's (rounded down).
absl::StatusOr<cpu::ConvGeometry3d> Plan(const Shape& image,
                                         const Shape& weight,
                                         const Attrs& attrs) {
  if (image.size() != 5 || weight.size() != 5) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv3d: expected 5-d input and weight, got ",
                     ShapeToString(image), " and ", ShapeToString(weight),
                     " (unbatched input: unsqueeze(0) first)"));
  }
  cpu::ConvGeometry3d g{image[0], image[1], weight[0], attrs.Int("groups"),
                        {},       {},       {},        {},
                        {},       {}};
  if (g.groups < 1 || g.c % g.groups != 0 || g.o % g.groups != 0 ||
      weight[1] * g.groups != g.c) {
    return absl::InvalidArgumentError(absl::StrCat(
        "conv3d: input ", ShapeToString(image), " and weight ",
        ShapeToString(weight), " with groups=", g.groups,
        ": groups must divide the input's channels and weight.shape[0], and "
        "the input must have weight.shape[1] * groups channels"));
  }
  TD_ASSIGN_OR_RETURN(Triple s, TripleAttr(attrs, "stride", 1, 1));
  TD_ASSIGN_OR_RETURN(Triple p, TripleAttr(attrs, "padding", 0, 0));
  TD_ASSIGN_OR_RETURN(Triple d, TripleAttr(attrs, "dilation", 1, 1));
  for (int a = 0; a < 3; ++a) {
    g.in[a] = image[2 + a], g.k[a] = weight[2 + a];
    g.stride[a] = s[a], g.pad[a] = p[a], g.dil[a] = d[a];
    const int64_t span = d[a] * (g.k[a] - 1) + 1;
    if (g.in[a] + 2 * p[a] < span) {
      return absl::InvalidArgumentError(absl::StrCat(
          "conv3d: kernel size ", ShapeToString(weight),
          " (dilated) can't be greater than the padded input size ",
          ShapeToString(image), " with padding ",
          ShapeToString(I{p[0], p[1], p[2]})));
    }
    g.out[a] = (g.in[a] + 2 * p[a] - span) / s[a] + 1;
  }
  return g;
}

absl::Status CheckDTypes(absl::Span<const Tensor> in, const char* what) {
  TD_RETURN_IF_ERROR(RequireFloating(in[0], what));
  for (const Tensor& t : in) {
    if (t.dtype() != in[0].dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": inputs must have one dtype, got ", DTypeName(in[0].dtype()),
          " and ", DTypeName(t.dtype())));
    }
  }
  return absl::OkStatus();
}

Specs InferConv3d(absl::Span<const Tensor> in, const Attrs& attrs,
                  const OpContext&) {
  TD_RETURN_IF_ERROR(CheckDTypes(in, "conv3d"));
  TD_ASSIGN_OR_RETURN(cpu::ConvGeometry3d g,
                      Plan(in[0].shape(), in[1].shape(), attrs));
  if (in.size() == 3 && (in[2].ndim() != 1 || in[2].shape()[0] != g.o)) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv3d: bias must have shape [", g.o, "], got ",
                     ShapeToString(in[2].shape())));
  }
  const Shape out{g.n, g.o, g.out[0], g.out[1], g.out[2]};
  TD_RETURN_IF_ERROR(CheckShape(out, ItemSize(in[0].dtype())));
  return std::vector<TensorSpec>{{in[0].dtype(), out, in[0].device()}};
}

absl::Status CpuConv3d(absl::Span<const Tensor> in,
                       absl::Span<const Tensor> out, const Attrs& attrs,
                       const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(cpu::ConvGeometry3d g,
                      Plan(in[0].shape(), in[1].shape(), attrs));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor w, Contiguous(in[1], ctx));
  // float32: oneDNN; a geometry it refuses takes the direct loops.
  if (!cpu::OnednnConvApplies(x.dtype(), g) ||
      !cpu::OnednnConv3d(x.view(), w.view(), g, out[0].view()).ok()) {
    TD_RETURN_IF_ERROR(cpu::Conv3d(x.view(), w.view(), g, out[0].view()));
  }
  if (in.size() == 3) {
    const Tensor b = in[2].AsStrided(
        {1, g.o, 1, 1, 1}, {0, in[2].strides()[0], 0, 0, 0}, in[2].offset());
    const StridedView o = out[0].view();
    TD_RETURN_IF_ERROR(cpu::Binary(cpu::BinaryOp::kAdd, o,
                                   b.BroadcastView(out[0].shape()), 1.0, o));
  }
  return absl::OkStatus();
}

// The gradient rows: grad [N, O, oD, oH, oW] and the weight (input gradient)
// or the input (weight gradient); the other operand's shape is an attribute.
// The output gradient's spatial sizes are taken as given (conv_transpose3d's
// output_padding makes them differ from Plan's by less than the stride).
template <bool kWeight>
absl::StatusOr<cpu::ConvGeometry3d> PlanGrad(absl::Span<const Tensor> in,
                                             const Attrs& attrs) {
  const char* what =
      kWeight ? "conv3d_backward_weight" : "conv3d_backward_input";
  TD_RETURN_IF_ERROR(CheckDTypes(in, what));
  TD_ASSIGN_OR_RETURN(
      Shape size,
      ShapeAttr(attrs, kWeight ? "weight_size" : "input_size", in[0].dtype()));
  const Shape& image = kWeight ? in[1].shape() : size;
  const Shape& weight = kWeight ? size : in[1].shape();
  TD_ASSIGN_OR_RETURN(cpu::ConvGeometry3d g, Plan(image, weight, attrs));
  const Shape& grad = in[0].shape();
  if (grad.size() != 5 || grad[0] != g.n || grad[1] != g.o) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the output gradient ", ShapeToString(grad),
                     " does not match input ", ShapeToString(image),
                     " and weight ", ShapeToString(weight)));
  }
  for (int a = 0; a < 3; ++a) g.out[a] = grad[2 + a];
  return g;
}

template <bool kWeight>
Specs InferGrad(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext&) {
  TD_RETURN_IF_ERROR(PlanGrad<kWeight>(in, attrs).status());
  TD_ASSIGN_OR_RETURN(
      Shape size,
      ShapeAttr(attrs, kWeight ? "weight_size" : "input_size", in[0].dtype()));
  return std::vector<TensorSpec>{{in[0].dtype(), size, in[0].device()}};
}

template <bool kWeight>
absl::Status CpuGrad(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(cpu::ConvGeometry3d g, PlanGrad<kWeight>(in, attrs));
  TD_ASSIGN_OR_RETURN(Tensor dy, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor other, Contiguous(in[1], ctx));
  if (!kWeight) {
    if (cpu::OnednnConvApplies(dy.dtype(), g) &&
        cpu::OnednnConv3dBackwardInput(dy.view(), other.view(), g,
                                       out[0].view())
            .ok()) {
      return absl::OkStatus();
    }
    return cpu::Conv3dBackwardInput(dy.view(), other.view(), g, out[0].view());
  }
  if (cpu::OnednnConvApplies(dy.dtype(), g)) {
    TD_ASSIGN_OR_RETURN(
        Tensor ws, Tensor::Empty(dy.device(), dy.dtype(),
                                 {cpu::OnednnConvGradWorkspace(g)}, ctx.alloc));
    if (cpu::OnednnConv3dBackwardWeight(dy.view(), other.view(), g, ws.view(),
                                        out[0].view())
            .ok()) {
      return absl::OkStatus();
    }
  }
  return cpu::Conv3dBackwardWeight(dy.view(), other.view(), g, out[0].view());
}

std::vector<AttrSpec> Geometry() {
  return {Optional("stride", AttrType::kInts, I{1}),
          Optional("padding", AttrType::kInts, I{0}),
          Optional("dilation", AttrType::kInts, I{1}),
          Optional("groups", AttrType::kInt, int64_t{1})};
}

std::vector<AttrSpec> GradAttrs(const char* size) {
  std::vector<AttrSpec> attrs = Geometry();
  attrs.insert(attrs.begin(), Required(size, AttrType::kInts));
  return attrs;
}

OpDef Internal(OpDef def) {
  def.differentiable = false;
  return def;
}

}  // namespace

std::vector<OpDef> Conv3dOps() {
  std::vector<OpDef> ops;
  const std::map<std::string, AttrValue> geo = {{"stride", I{2, 1, 1}},
                                                {"padding", I{1, 0, 1}},
                                                {"dilation", I{1, 2, 1}},
                                                {"groups", int64_t{2}}};
  OpDef conv = MakeOp("conv3d", 2, 3, Geometry(),
                      "3-d convolution of NCDHW input with [O, C/groups, kD, "
                      "kH, kW] weight and optional bias.");
  conv.infer = InferConv3d;
  conv.cpu = CpuConv3d;
  conv.examples = {Example({{2, 4, 5, 6, 5}, {6, 2, 3, 2, 3}, {6}}, geo),
                   Example({{1, 3, 3, 4, 4}, {2, 3, 1, 1, 1}})};
  ops.push_back(std::move(conv));
  std::map<std::string, AttrValue> gi = geo, gw = geo;
  gi["input_size"] = I{2, 4, 5, 6, 5};
  gw["weight_size"] = I{6, 2, 3, 2, 3};
  OpDef ci =
      Internal(MakeOp("conv3d_backward_input", 2, 2, GradAttrs("input_size"),
                      "The gradient of conv3d's input from its output "
                      "gradient and weight (used by autograd)."));
  ci.infer = InferGrad<false>;
  ci.cpu = CpuGrad<false>;
  ci.examples = {Example({{2, 6, 3, 4, 5}, {6, 2, 3, 2, 3}}, gi)};
  ops.push_back(std::move(ci));
  OpDef cw =
      Internal(MakeOp("conv3d_backward_weight", 2, 2, GradAttrs("weight_size"),
                      "The gradient of conv3d's weight from its output "
                      "gradient and input (used by autograd)."));
  cw.infer = InferGrad<true>;
  cw.cpu = CpuGrad<true>;
  cw.examples = {Example({{2, 6, 3, 4, 5}, {2, 4, 5, 6, 5}}, gw)};
  ops.push_back(std::move(cw));
  return ops;
}

}  // namespace tensord

// grid_sampler_3d and grid_sampler_3d_backward (PyTorch's aten ops of the
// same names and schemas; kernels/cpu/grid_sample_3d.h): volumes [N, C, D,
// H, W] sampled at grid [N, Do, Ho, Wo, 3], trilinear ("bilinear", 0) or
// nearest (1), zeros / border / reflection padding (0 / 1 / 2, PyTorch's
// enums). The forward's gradient formula (derivatives.yaml's) is the
// backward row. CPU only (in KnownCpuOnly): the 2-d sampler has no CUDA
// kernel either. Half inputs compute in float32 (Note [Half compute]).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/grid_sample_3d.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/derivatives.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using I = std::vector<int64_t>;
constexpr char kForward[] = "grid_sampler_3d";
constexpr char kBackward[] = "grid_sampler_3d_backward";

absl::Status CheckModes(const Attrs& attrs, const char* op) {
  const int64_t mode = attrs.Int("interpolation_mode"),
                pad = attrs.Int("padding_mode");
  if (mode < 0 || mode > 1 || pad < 0 || pad > 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": interpolation_mode (", mode,
                     ") must be 0 or 1 (bilinear, "
                     "nearest: no bicubic in 3-d) and padding_mode (",
                     pad,
                     ") 0, 1 or 2 "
                     "(zeros, border, reflection)"));
  }
  return absl::OkStatus();
}

// input [N, C, D, H, W] and grid [N, Do, Ho, Wo, 3] of one floating dtype.
absl::Status CheckInputs(const Tensor& x, const Tensor& grid, const char* op) {
  TD_RETURN_IF_ERROR(RequireFloating(x, op));
  const Shape &xs = x.shape(), &gs = grid.shape();
  if (grid.dtype() != x.dtype() || xs.size() != 5 || gs.size() != 5 ||
      gs[4] != 3 || gs[0] != xs[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        op,
        ": expected input [N, C, D, H, W] and grid [N, Do, Ho, Wo, 3] of "
        "one dtype, got ",
        DTypeName(x.dtype()), ShapeToString(xs), " and ",
        DTypeName(grid.dtype()), ShapeToString(gs)));
  }
  return absl::OkStatus();
}

cpu::GridInterpolation Mode(const Attrs& a) {
  return static_cast<cpu::GridInterpolation>(a.Int("interpolation_mode"));
}
cpu::GridPadding Padding(const Attrs& a) {
  return static_cast<cpu::GridPadding>(a.Int("padding_mode"));
}

Specs InferForward(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  TD_RETURN_IF_ERROR(CheckInputs(in[0], in[1], kForward));
  TD_RETURN_IF_ERROR(CheckModes(attrs, kForward));
  const Shape &xs = in[0].shape(), &gs = in[1].shape();
  return std::vector<TensorSpec>{
      {in[0].dtype(), {xs[0], xs[1], gs[1], gs[2], gs[3]}, in[0].device()}};
}

absl::Status Forward(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::GridSampler3d(c[0].view(), c[1].view(), Mode(attrs),
                            Padding(attrs), attrs.Bool("align_corners"),
                            out[0].view());
}

Specs InferBackward(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  const Tensor &g = in[0], &x = in[1], &grid = in[2];
  TD_RETURN_IF_ERROR(CheckInputs(x, grid, kBackward));
  TD_RETURN_IF_ERROR(CheckModes(attrs, kBackward));
  const Shape &gs = g.shape(), &xs = x.shape(), &ds = grid.shape();
  if (g.dtype() != x.dtype() || gs.size() != 5 || gs[0] != xs[0] ||
      gs[1] != xs[1] || gs[2] != ds[1] || gs[3] != ds[2] || gs[4] != ds[3]) {
    return absl::InvalidArgumentError(
        absl::StrCat(kBackward,
                     ": expected grad_output [N, C, Do, Ho, Wo] of input's "
                     "dtype, got ",
                     DTypeName(g.dtype()), ShapeToString(gs), " for input ",
                     ShapeToString(xs), " and grid ", ShapeToString(ds)));
  }
  if (attrs.Ints("output_mask").size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(kBackward, ": output_mask must have 2 values, got ",
                     ShapeToString(attrs.Ints("output_mask"))));
  }
  return std::vector<TensorSpec>{{x.dtype(), xs, x.device()},
                                 {grid.dtype(), ds, grid.device()}};
}

absl::Status Backward(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  // Input gradient not asked for (output_mask[0] == 0): zeros, not computed.
  StridedView gi = out[0].view();
  if (attrs.Ints("output_mask")[0] == 0) {
    if (out[0].nbytes() > 0) std::memset(out[0].data(), 0, out[0].nbytes());
    gi.data = nullptr;
  }
  return cpu::GridSampler3dBackward(
      c[0].view(), c[1].view(), c[2].view(), Mode(attrs), Padding(attrs),
      attrs.Bool("align_corners"), gi, out[1].view());
}

std::map<std::string, AttrValue> Modes(const Attrs& a) {
  return {{"interpolation_mode", a.Int("interpolation_mode")},
          {"padding_mode", a.Int("padding_mode")},
          {"align_corners", a.Bool("align_corners")}};
}

Grads ForwardGrad(GradCtx& g) {
  Grads r(2);
  auto attrs = Modes(g.attrs());
  attrs["output_mask"] = I{g.needs(0) ? 1 : 0, g.needs(1) ? 1 : 0};
  std::vector<GradValue> both =
      g.Ops(kBackward, {g.grad(), g.in(0), g.in(1)}, std::move(attrs));
  if (both.size() != 2) return {both[0], both[0]};  // the error
  if (g.needs(0)) r[0] = both[0];
  if (g.needs(1)) r[1] = both[1];
  return r;
}

std::vector<AttrSpec> ModeAttrs() {
  return {Optional("interpolation_mode", AttrType::kInt, int64_t{0}),
          Optional("padding_mode", AttrType::kInt, int64_t{0}),
          Optional("align_corners", AttrType::kBool, false)};
}

}  // namespace

std::vector<GradRow> GridSample3dGrads() {
  return {{kForward, {0, 1}, {}, ForwardGrad}};
}

std::vector<OpDef> GridSample3dOps() {
  OpDef fwd = MakeOp(
      kForward, 2, 2, ModeAttrs(),
      "torch.nn.functional.grid_sample of a volume (aten.grid_sampler_3d): "
      "input [N, C, D, H, W] at grid [N, Do, Ho, Wo, 3] -> [N, C, Do, Ho, "
      "Wo]; interpolation_mode 0/1 bilinear/nearest, padding_mode 0/1/2 "
      "zeros/border/reflection, as PyTorch's enums.");
  fwd.infer = InferForward;
  fwd.cpu = Forward;
  fwd.examples = {Example({{2, 3, 4, 5, 3}, {2, 2, 3, 4, 3}}),
                  Example({{1, 2, 3, 3, 3}, {1, 2, 2, 2, 3}},
                          {{"interpolation_mode", int64_t{1}},
                           {"padding_mode", int64_t{2}},
                           {"align_corners", true}})};
  std::vector<AttrSpec> battrs = ModeAttrs();
  battrs.push_back(Optional("output_mask", AttrType::kInts, I{1, 1}));
  OpDef bwd = MakeOp(
      kBackward, 3, 3, std::move(battrs),
      "The gradients of grid_sampler_3d's input and grid from the output "
      "gradient, input and grid (used by autograd); output_mask[0] == 0 "
      "leaves the input gradient zero.");
  bwd.differentiable = false;
  bwd.num_outputs = 2;
  bwd.infer = InferBackward;
  bwd.cpu = Backward;
  bwd.examples = {Example({{2, 3, 2, 3, 4}, {2, 3, 4, 5, 3}, {2, 2, 3, 4, 3}}),
                  Example({{1, 2, 2, 2, 2}, {1, 2, 3, 3, 3}, {1, 2, 2, 2, 3}},
                          {{"interpolation_mode", int64_t{1}},
                           {"padding_mode", int64_t{1}}})};
  std::vector<OpDef> ops;
  ops.push_back(std::move(fwd));
  ops.push_back(std::move(bwd));
  return ops;
}

}  // namespace tensord

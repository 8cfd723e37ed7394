// grid_sampler_2d_backward (PyTorch's aten.grid_sampler_2d_backward): the
// gradients of grid_sampler_2d's input and grid (kernels/cpu/grid_sample.h),
// bilinear / nearest / bicubic with zeros / border / reflection padding.
// The forward runs as PyTorch's decomposition on the device's ops, so only
// the backward is a row. CPU only (in KnownCpuOnly): no CUDA forward kernel
// exists to sit beside. Half inputs compute in float32 (Note [Half compute]).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/grid_sample.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using I = std::vector<int64_t>;

constexpr char kName[] = "grid_sampler_2d_backward";

// Inputs: grad_output [N, C, Ho, Wo], input [N, C, H, W], grid
// [N, Ho, Wo, 2], one floating dtype; the modes PyTorch's enums.
absl::Status Check(absl::Span<const Tensor> in, const Attrs& attrs) {
  const Tensor &g = in[0], &x = in[1], &grid = in[2];
  TD_RETURN_IF_ERROR(RequireFloating(x, kName));
  if (g.dtype() != x.dtype() || grid.dtype() != x.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kName, ": grad_output, input and grid must have one dtype, got ",
        DTypeName(g.dtype()), ", ", DTypeName(x.dtype()), " and ",
        DTypeName(grid.dtype())));
  }
  const Shape &gs = g.shape(), &xs = x.shape(), &ds = grid.shape();
  if (xs.size() != 4 || gs.size() != 4 || ds.size() != 4 || ds[3] != 2 ||
      gs[0] != xs[0] || gs[1] != xs[1] || ds[0] != xs[0] || ds[1] != gs[2] ||
      ds[2] != gs[3]) {
    return absl::InvalidArgumentError(absl::StrCat(
        kName, ": expected grad_output [N, C, Ho, Wo], input [N, C, H, W] ",
        "and grid [N, Ho, Wo, 2], got ", ShapeToString(gs), ", ",
        ShapeToString(xs), " and ", ShapeToString(ds)));
  }
  const int64_t mode = attrs.Int("interpolation_mode"),
                pad = attrs.Int("padding_mode");
  if (mode < 0 || mode > 2 || pad < 0 || pad > 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        kName, ": interpolation_mode (", mode, ") and padding_mode (", pad,
        ") must be 0, 1 or 2 (bilinear/nearest/bicubic, "
        "zeros/border/reflection)"));
  }
  const I& mask = attrs.Ints("output_mask");
  if (mask.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        kName, ": output_mask must have 2 values, got ", ShapeToString(mask)));
  }
  return absl::OkStatus();
}

Specs Infer(absl::Span<const Tensor> in, const Attrs& attrs, const OpContext&) {
  TD_RETURN_IF_ERROR(Check(in, attrs));
  return std::vector<TensorSpec>{
      {in[1].dtype(), in[1].shape(), in[1].device()},
      {in[2].dtype(), in[2].shape(), in[2].device()}};
}

absl::Status Cpu(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                 const Attrs& attrs, const OpContext& ctx) {
  TD_RETURN_IF_ERROR(Check(in, attrs));
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  // Input gradient not asked for (output_mask[0] == 0): zeros, not computed.
  StridedView gi = out[0].view();
  if (attrs.Ints("output_mask")[0] == 0) {
    if (out[0].nbytes() > 0) std::memset(out[0].data(), 0, out[0].nbytes());
    gi.data = nullptr;
  }
  return cpu::GridSampler2dBackward(
      c[0].view(), c[1].view(), c[2].view(),
      static_cast<cpu::GridInterpolation>(attrs.Int("interpolation_mode")),
      static_cast<cpu::GridPadding>(attrs.Int("padding_mode")),
      attrs.Bool("align_corners"), gi, out[1].view());
}

}  // namespace

std::vector<OpDef> GridSampleOps() {
  OpDef bwd = MakeOp(
      kName, 3, 3,
      {Optional("interpolation_mode", AttrType::kInt, int64_t{0}),
       Optional("padding_mode", AttrType::kInt, int64_t{0}),
       Optional("align_corners", AttrType::kBool, false),
       Optional("output_mask", AttrType::kInts, I{1, 1})},
      "The gradients of grid_sampler_2d's input and grid from the output "
      "gradient, input and grid (used by autograd); interpolation_mode 0/1/2 "
      "bilinear/nearest/bicubic, padding_mode 0/1/2 zeros/border/reflection, "
      "as PyTorch's enums; output_mask[0] == 0 leaves the input gradient "
      "zero.");
  bwd.differentiable = false;
  bwd.num_outputs = 2;
  bwd.infer = Infer;
  bwd.cpu = Cpu;
  bwd.examples = {Example({{2, 3, 4, 5}, {2, 3, 5, 6}, {2, 4, 5, 2}}),
                  Example({{1, 2, 3, 3}, {1, 2, 4, 4}, {1, 3, 3, 2}},
                          {{"interpolation_mode", int64_t{2}},
                           {"padding_mode", int64_t{2}},
                           {"align_corners", true}}),
                  Example({{1, 2, 3, 3}, {1, 2, 4, 4}, {1, 3, 3, 2}},
                          {{"interpolation_mode", int64_t{1}},
                           {"padding_mode", int64_t{1}}})};
  return {std::move(bwd)};
}

}  // namespace tensord

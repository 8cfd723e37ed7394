// avg_pool3d, adaptive_avg_pool3d and their backward rows: PyTorch's
// schemas and semantics (the boxes and divisors of kernels/cpu/
// avg_pool3d.h: count_include_pad, divisor_override, ceil_mode; PyTorch's
// adaptive windows), on [N, C, D, H, W] or [C, D, H, W] input. The backward
// rows serve autograd (derivatives_nn.cc) and the PyTorch device's
// avg_pool3d_backward / _adaptive_avg_pool3d_backward. CUDA: cuda_conv.cc
// attaches kernels/cuda/avg_pool3d.h's. bfloat16 computes in float32 (Note
// [Half compute]); CPU PyTorch sums adaptive_avg_pool3d's bfloat16 windows
// in bfloat16 and divides dim by dim, so last bits differ there (its OpInfo
// bfloat16 cases are not in opinfo_passing.txt), and it has no bfloat16
// avg_pool3d at all.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/avg_pool3d.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"
#include "runtime/ops/pool_geometry.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using I = std::vector<int64_t>;

constexpr char kAvg[] = "avg_pool3d";
constexpr char kAvgBackward[] = "avg_pool3d_backward";
constexpr char kAdaptive[] = "adaptive_avg_pool3d";
constexpr char kAdaptiveBackward[] = "adaptive_avg_pool3d_backward";

Specs InferAvg(absl::Span<const Tensor> in, const Attrs& attrs,
               const OpContext&) {
  TD_ASSIGN_OR_RETURN(AvgPool3dPlan plan, PlanAvgPool3d(in[0], attrs, kAvg));
  return std::vector<TensorSpec>{{in[0].dtype(), plan.shape, in[0].device()}};
}

absl::Status CpuAvg(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                    const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(AvgPool3dPlan plan, PlanAvgPool3d(in[0], attrs, kAvg));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  return cpu::AvgPool3d(AsVolumes(x, 3), plan.window, AsVolumes(out[0], 3));
}

Specs InferAdaptive(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  TD_ASSIGN_OR_RETURN(Shape shape,
                      PlanAdaptivePool(in[0], attrs, 3, kAdaptive));
  return std::vector<TensorSpec>{{in[0].dtype(), shape, in[0].device()}};
}

absl::Status CpuAdaptive(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs&,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  cpu::AvgWindow3d w;
  w.adaptive = true;
  return cpu::AvgPool3d(AsVolumes(x, 3), w, AsVolumes(out[0], 3));
}

// (grad_output, self): self floating, 4-d or 5-d; grad_output of self's
// dtype, shaped as avg_pool3d pools self (windowed) or as self but for its
// last three sizes (adaptive: any output size).
Specs InferBackward(absl::Span<const Tensor> in, const Attrs& attrs,
                    bool adaptive) {
  const Tensor &grad = in[0], &self = in[1];
  const char* what = adaptive ? kAdaptiveBackward : kAvgBackward;
  TD_RETURN_IF_ERROR(RequireFloating(self, what));
  Shape want;
  if (adaptive) {
    if (self.ndim() != 4 && self.ndim() != 5) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": expected a 4D or 5D self, got shape ",
                       ShapeToString(self.shape())));
    }
    want = self.shape();
    if (grad.ndim() == self.ndim()) {
      for (int d = self.ndim() - 3; d < self.ndim(); ++d) {
        want[d] = grad.shape()[d];
      }
    }
  } else {
    TD_ASSIGN_OR_RETURN(AvgPool3dPlan plan, PlanAvgPool3d(self, attrs, what));
    want = plan.shape;
  }
  if (grad.dtype() != self.dtype() || grad.shape() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": grad_output should be ", DTypeName(self.dtype()), " ",
        ShapeToString(want), " (self ", ShapeToString(self.shape()),
        " pooled), got ", DTypeName(grad.dtype()), " ",
        ShapeToString(grad.shape())));
  }
  return std::vector<TensorSpec>{{self.dtype(), self.shape(), self.device()}};
}

template <bool kAdaptiveRow>
Specs InferBackwardRow(absl::Span<const Tensor> in, const Attrs& attrs,
                       const OpContext&) {
  return InferBackward(in, attrs, kAdaptiveRow);
}

template <bool kAdaptiveRow>
absl::Status CpuBackward(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs& attrs,
                         const OpContext& ctx) {
  cpu::AvgWindow3d w;
  w.adaptive = kAdaptiveRow;
  if (!kAdaptiveRow) {
    TD_ASSIGN_OR_RETURN(AvgPool3dPlan plan,
                        PlanAvgPool3d(in[1], attrs, kAvgBackward));
    w = plan.window;
  }
  TD_ASSIGN_OR_RETURN(Tensor grad, Contiguous(in[0], ctx));
  return cpu::AvgPool3dBackward(AsVolumes(grad, 3), w, AsVolumes(out[0], 3));
}

}  // namespace

std::vector<OpDef> AvgPool3dOps() {
  std::vector<OpDef> ops;
  OpDef avg = MakeOp(
      kAvg, 1, 1, AvgPool3dAttrs(),
      "3-d average pooling (stride defaults to kernel_size); a non-zero "
      "divisor_override divides every window's sum instead of its count (0: "
      "none); int64 input averages in int64, truncating, as PyTorch's CPU "
      "kernel.");
  avg.infer = InferAvg;
  avg.cpu = CpuAvg;
  avg.examples = {
      Example({{1, 2, 5, 5, 5}}, {{"kernel_size", I{2, 3, 4}},
                                  {"stride", I{1, 2, 2}},
                                  {"padding", I{0, 1, 2}},
                                  {"ceil_mode", true}}),
      Example({{2, 4, 6, 5}}, {{"kernel_size", I{2}},
                               {"padding", I{1}},
                               {"count_include_pad", false},
                               {"divisor_override", int64_t{-2}}}),
      Example({{1, 2, 4, 4, 4}}, {{"kernel_size", I{2}}}, {DType::kInt64})};
  ops.push_back(std::move(avg));
  OpDef avg_bwd = MakeOp(kAvgBackward, 2, 2, AvgPool3dAttrs(),
                         "The gradient of avg_pool3d's input from the "
                         "output gradient and input.");
  avg_bwd.differentiable = false;
  avg_bwd.infer = InferBackwardRow<false>;
  avg_bwd.cpu = CpuBackward<false>;
  avg_bwd.examples = {Example({{1, 2, 4, 3, 4}, {1, 2, 5, 5, 5}},
                              {{"kernel_size", I{2, 3, 4}},
                               {"stride", I{1, 2, 2}},
                               {"padding", I{0, 1, 2}},
                               {"ceil_mode", true},
                               {"divisor_override", int64_t{3}}})};
  ops.push_back(std::move(avg_bwd));
  OpDef ada =
      MakeOp(kAdaptive, 1, 1, {Required("output_size", AttrType::kInts)},
             "3-d average pooling to output_size (one int or three; "
             "PyTorch's windows).");
  ada.infer = InferAdaptive;
  ada.cpu = CpuAdaptive;
  ada.examples = {Example({{2, 3, 5, 4, 7}}, {{"output_size", I{3, 2, 4}}}),
                  Example({{3, 4, 3, 5}}, {{"output_size", I{5, 2, 7}}})};
  ops.push_back(std::move(ada));
  OpDef ada_bwd = MakeOp(kAdaptiveBackward, 2, 2, {},
                         "The gradient of adaptive_avg_pool3d's input from "
                         "the output gradient and input.");
  ada_bwd.differentiable = false;
  ada_bwd.infer = InferBackwardRow<true>;
  ada_bwd.cpu = CpuBackward<true>;
  ada_bwd.examples = {Example({{2, 3, 3, 2, 4}, {2, 3, 5, 4, 7}})};
  ops.push_back(std::move(ada_bwd));
  return ops;
}

}  // namespace tensord

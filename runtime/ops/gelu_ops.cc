// gelu (exact or tanh-approximated, PyTorch's `approximate`) and its
// backward. On the CPU both are fused kernels (kernels/cpu/gelu.h) over a
// contiguous copy of the input; on CUDA both rows are elementwise kernels
// (cuda_pointwise.cc), though gelu's recorded gradient there is still the
// composite formula (derivatives_pointwise.cc picks gelu_backward on the CPU).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/gelu.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;

absl::StatusOr<bool> Tanh(const Attrs& attrs) {
  const std::string& a = attrs.String("approximate");
  if (a == "none" || a == "tanh") return a == "tanh";
  return absl::InvalidArgumentError(absl::StrCat(
      "approximate argument must be either none or tanh, got '", a, "'"));
}

// Floating result: integer and bool inputs give float32 (as the unary rows).
Specs InferGelu(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext&) {
  TD_RETURN_IF_ERROR(Tanh(attrs).status());
  const DType d = IsFloating(in[0].dtype()) ? in[0].dtype() : kDefaultFloat;
  return std::vector<TensorSpec>{{d, in[0].shape(), in[0].device()}};
}

absl::Status CpuGelu(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(bool tanh, Tanh(attrs));
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  TD_ASSIGN_OR_RETURN(x, Contiguous(x, ctx));
  return cpu::GeluForward(x.view(), x.numel(), tanh, out[0].view());
}

// (grad, input) -> grad_input.
Specs InferBackward(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  TD_RETURN_IF_ERROR(Tanh(attrs).status());
  TD_RETURN_IF_ERROR(RequireFloating(in[1], "gelu_backward"));
  if (in[0].shape() != in[1].shape() || in[0].dtype() != in[1].dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gelu_backward: grad ", DTypeName(in[0].dtype()), " ",
        ShapeToString(in[0].shape()), " must match input ",
        DTypeName(in[1].dtype()), " ", ShapeToString(in[1].shape())));
  }
  return std::vector<TensorSpec>{
      {in[1].dtype(), in[1].shape(), in[1].device()}};
}

absl::Status CpuBackward(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs& attrs,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(bool tanh, Tanh(attrs));
  TD_ASSIGN_OR_RETURN(Tensor dy, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[1], ctx));
  return cpu::GeluBackward(dy.view(), x.view(), x.numel(), tanh, out[0].view());
}

}  // namespace

std::vector<OpDef> GeluOps() {
  const AttrSpec approximate =
      Optional("approximate", AttrType::kString, std::string("none"));
  std::vector<OpDef> ops;
  OpDef gelu = MakeOp("gelu", 1, 1, {approximate},
                      "input * Phi(input): exact (erf) or, approximate='tanh', "
                      "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).");
  gelu.infer = InferGelu;
  gelu.cpu = CpuGelu;
  gelu.examples = {Example({{2, 3}}),
                   Example({{3, 4}}, {{"approximate", std::string("tanh")}})};
  ops.push_back(std::move(gelu));
  OpDef bwd = MakeOp("gelu_backward", 2, 2, {approximate},
                     "gelu's input gradient: (grad, input) -> grad * "
                     "gelu'(input).");
  bwd.infer = InferBackward;
  bwd.cpu = CpuBackward;
  bwd.differentiable = false;
  bwd.examples = {
      Example({{2, 3}, {2, 3}}),
      Example({{2, 3}, {2, 3}}, {{"approximate", std::string("tanh")}})};
  ops.push_back(std::move(bwd));
  return ops;
}

}  // namespace tensord

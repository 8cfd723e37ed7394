// Pointwise ops with broadcasting and PyTorch type promotion: add, sub, mul,
// div, neg, relu.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

absl::StatusOr<std::vector<TensorSpec>> InferBinary(
    absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  TD_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(in[0].shape(), in[1].shape()));
  return std::vector<TensorSpec>{{ResultType(in), std::move(shape), in[0].device()}};
}

// True division: integer operands give the default float type.
absl::StatusOr<std::vector<TensorSpec>> InferDiv(absl::Span<const Tensor> in,
                                                 const Attrs& attrs,
                                                 const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(auto specs, InferBinary(in, attrs, ctx));
  if (!IsFloating(specs[0].dtype)) specs[0].dtype = kDefaultFloat;
  return specs;
}

absl::StatusOr<std::vector<TensorSpec>> InferSubtractable(
    absl::Span<const Tensor> in, const Attrs& attrs, const OpContext& ctx) {
  if (in[0].dtype() == DType::kBool || in[1].dtype() == DType::kBool) {
    return absl::InvalidArgumentError(
        "subtraction with bool tensors is not supported; use logical_xor or "
        "~ instead");
  }
  return InferBinary(in, attrs, ctx);
}

absl::StatusOr<std::vector<TensorSpec>> InferUnary(absl::Span<const Tensor> in,
                                                   const Attrs&,
                                                   const OpContext&) {
  if (in[0].dtype() == DType::kBool) {
    return absl::InvalidArgumentError(
        "this op is not defined for bool tensors; convert with .to() first");
  }
  return std::vector<TensorSpec>{{in[0].dtype(), in[0].shape(), in[0].device()}};
}

template <cpu::BinaryOp kOp>
absl::Status CpuBinary(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                       const Attrs& attrs, const OpContext& ctx) {
  const DType dtype = out[0].dtype();
  TD_ASSIGN_OR_RETURN(Tensor a, CastTo(in[0], dtype, ctx));
  TD_ASSIGN_OR_RETURN(Tensor b, CastTo(in[1], dtype, ctx));
  const double alpha =
      (kOp == cpu::BinaryOp::kAdd || kOp == cpu::BinaryOp::kSub)
          ? attrs.Float("alpha")
          : 1.0;
  const Shape& shape = out[0].shape();
  return cpu::Binary(kOp, a.BroadcastView(shape), b.BroadcastView(shape), alpha,
                     out[0].view());
}

template <cpu::UnaryOp kOp>
absl::Status CpuUnary(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs&, const OpContext&) {
  return cpu::Unary(kOp, in[0].view(), out[0].view());
}

OpDef BinaryRow(std::string name, InferFn infer, KernelFn cpu_fn,
                std::string doc, bool has_alpha = false) {
  OpDef def;
  def.name = std::move(name);
  def.min_inputs = def.max_inputs = 2;
  if (has_alpha) def.attrs = {Optional("alpha", AttrType::kFloat, 1.0)};
  def.infer = infer;
  def.cpu = cpu_fn;
  def.differentiable = true;
  def.doc = std::move(doc);
  return def;
}

OpDef UnaryRow(std::string name, KernelFn cpu_fn, std::string doc) {
  OpDef def;
  def.name = std::move(name);
  def.min_inputs = def.max_inputs = 1;
  def.infer = InferUnary;
  def.cpu = cpu_fn;
  def.differentiable = true;
  def.doc = std::move(doc);
  return def;
}

}  // namespace

KernelFn CudaAddKernel();  // cuda_pointwise.cc: nullptr without CUDA

std::vector<OpDef> PointwiseOps() {
  std::vector<OpDef> ops;
  OpDef add = BinaryRow("add", InferBinary, CpuBinary<cpu::BinaryOp::kAdd>,
                        "input + alpha * other, broadcasting.", true);
  add.cuda = CudaAddKernel();
  ops.push_back(std::move(add));
  ops.push_back(BinaryRow("sub", InferSubtractable,
                          CpuBinary<cpu::BinaryOp::kSub>,
                          "input - alpha * other, broadcasting.", true));
  ops.push_back(BinaryRow("mul", InferBinary, CpuBinary<cpu::BinaryOp::kMul>,
                          "input * other, broadcasting."));
  ops.push_back(BinaryRow("div", InferDiv, CpuBinary<cpu::BinaryOp::kDiv>,
                          "True division input / other, broadcasting."));
  ops.push_back(UnaryRow("neg", CpuUnary<cpu::UnaryOp::kNeg>, "-input."));
  ops.push_back(UnaryRow("relu", CpuUnary<cpu::UnaryOp::kRelu>, "max(input, 0)."));
  return ops;
}

}  // namespace tensord

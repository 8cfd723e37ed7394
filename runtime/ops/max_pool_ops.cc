// max_pool2d_with_indices and max_pool2d_with_indices_backward: PyTorch's
// schemas and semantics (Note [Max pool indices], kernels/cpu/max_pool.h).
// The forward gives the window maxima and their int64 indices into each
// (n, c) image's H * W plane; the backward adds the output gradient at the
// indices into zeros shaped as the input. Kernels: kernels/cpu/max_pool.h,
// kernels/cuda/max_pool.h (cuda_conv.cc attaches them). Gradients as
// derivatives.yaml's (derivatives_nn.cc). max_pool2d (conv_ops.cc) stays for
// the native clients: no indices, a backward that finds the maxima again.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/max_pool.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"
#include "runtime/ops/pool_geometry.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using I = std::vector<int64_t>;

constexpr char kForward[] = "max_pool2d_with_indices";
constexpr char kBackward[] = "max_pool2d_with_indices_backward";

Specs InferForward(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  TD_ASSIGN_OR_RETURN(cpu::Window2d w,
                      PlanPool2d(in[0], attrs, true, kForward));
  const Shape shape = PoolShape(in[0], w.oh, w.ow);
  return std::vector<TensorSpec>{{in[0].dtype(), shape, in[0].device()},
                                 {DType::kInt64, shape, in[0].device()}};
}

absl::Status CpuForward(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs& attrs,
                        const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(cpu::Window2d w,
                      PlanPool2d(in[0], attrs, true, kForward));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  return cpu::MaxPool2dWithIndices(As4d(x), w, As4d(out[0]), As4d(out[1]));
}

// (grad_output, self, indices): grad_output and indices shaped as the
// forward's output for self and these attributes (PyTorch checks the same),
// grad_output of self's dtype, indices int64.
Specs InferBackward(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  const Tensor &grad = in[0], &self = in[1], &indices = in[2];
  TD_ASSIGN_OR_RETURN(cpu::Window2d w,
                      PlanPool2d(self, attrs, true, kBackward));
  const Shape want = PoolShape(self, w.oh, w.ow);
  if (grad.dtype() != self.dtype() || grad.shape() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        kBackward, ": grad_output should be ", DTypeName(self.dtype()), " ",
        ShapeToString(want), " (the pooled shape of self ",
        ShapeToString(self.shape()), "), got ", DTypeName(grad.dtype()), " ",
        ShapeToString(grad.shape())));
  }
  if (indices.dtype() != DType::kInt64 || indices.shape() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        kBackward, ": indices should be int64 ", ShapeToString(want),
        " (max_pool2d_with_indices' indices), got ", DTypeName(indices.dtype()),
        " ", ShapeToString(indices.shape())));
  }
  return std::vector<TensorSpec>{{self.dtype(), self.shape(), self.device()}};
}

absl::Status CpuBackward(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs&,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor grad, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor indices, Contiguous(in[2], ctx));
  return cpu::MaxPool2dWithIndicesBackward(As4d(grad), As4d(indices),
                                           As4d(out[0]));
}

}  // namespace

std::vector<OpDef> MaxPoolOps() {
  std::vector<OpDef> ops;
  OpDef fwd = MakeOp(
      kForward, 1, 1, MaxPoolAttrs(),
      "(values, indices) of 2-d max pooling (stride defaults to "
      "kernel_size): each window's maximum (the first one; NaN propagates) "
      "and its int64 index into the input's H * W plane, as PyTorch's.");
  fwd.num_outputs = 2;
  fwd.infer = InferForward;
  fwd.cpu = CpuForward;
  fwd.examples = {
      Example({{1, 2, 5, 5}}, {{"kernel_size", I{2}}, {"ceil_mode", true}}),
      Example({{2, 6, 5}}, {{"kernel_size", I{3, 2}},
                            {"stride", I{2, 1}},
                            {"padding", I{1}},
                            {"dilation", I{1, 2}}})};
  ops.push_back(std::move(fwd));
  OpDef bwd = MakeOp(
      kBackward, 3, 3, MaxPoolAttrs(),
      "The gradient of max_pool2d_with_indices' input: grad_output added at "
      "the indices into zeros shaped as self (indices outside the plane "
      "add nothing).");
  bwd.infer = InferBackward;
  bwd.cpu = CpuBackward;
  // Zero indices (the examples' integer inputs): every gradient to element
  // 0 of its image.
  bwd.examples = {Example({{1, 2, 3, 3}, {1, 2, 5, 5}, {1, 2, 3, 3}},
                          {{"kernel_size", I{2}}, {"ceil_mode", true}},
                          {DType::kFloat32, DType::kFloat32, DType::kInt64})};
  ops.push_back(std::move(bwd));
  return ops;
}

}  // namespace tensord

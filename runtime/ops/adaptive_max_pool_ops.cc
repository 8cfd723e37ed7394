// adaptive_max_pool2d, adaptive_max_pool3d, their backward rows and
// max_pool3d_with_indices_backward: PyTorch's schemas and semantics. The
// forwards give each adaptive window's maximum (PyTorch's windows,
// [floor(i * in / out), ceil((i + 1) * in / out)) per dim; NaN propagates;
// ties to the first) and its int64 index into the input's flattened H * W
// (D * H * W) plane (Note [Max pool indices], kernels/cpu/max_pool.h). The
// backwards add the output gradient at the indices into zeros shaped as the
// input: one kernel for all of them and for max_pool2d_with_indices_backward
// (max_pool_ops.cc), on [planes, 1, 1, plane size] views. max_pool3d's
// forward is not a row: the PyTorch device runs PyTorch's decomposition of
// it (rows that exist), whose indices this backward takes. CUDA:
// cuda_conv.cc attaches kernels/cuda/max_pool.h's. Gradients:
// derivatives_nn.cc.
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

template <int kSpatial>
constexpr const char* AdaptiveName() {
  return kSpatial == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d";
}

template <int kSpatial>
Specs InferAdaptive(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  TD_ASSIGN_OR_RETURN(Shape shape, PlanAdaptivePool(in[0], attrs, kSpatial,
                                                    AdaptiveName<kSpatial>()));
  return std::vector<TensorSpec>{{in[0].dtype(), shape, in[0].device()},
                                 {DType::kInt64, shape, in[0].device()}};
}

template <int kSpatial>
absl::Status CpuAdaptive(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs&,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  return cpu::AdaptiveMaxPool3d(AsVolumes(x, kSpatial),
                                AsVolumes(out[0], kSpatial),
                                AsVolumes(out[1], kSpatial));
}

// (grad_output, self, indices) of a backward with `spatial` pooled dims:
// self floating with 1 or 2 dims before them; grad_output of self's dtype
// and indices int64, both of one shape, self's but for the pooled sizes
// (what pooled them, and so those sizes, the row does not recompute:
// indices outside a plane add nothing).
Specs InferIndicesBackward(absl::Span<const Tensor> in, int spatial,
                           const char* what) {
  const Tensor &grad = in[0], &self = in[1], &indices = in[2];
  TD_RETURN_IF_ERROR(RequireFloating(self, what));
  if (self.ndim() != spatial + 1 && self.ndim() != spatial + 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected a ", spatial + 1, "D or ", spatial + 2,
                     "D self, got shape ", ShapeToString(self.shape())));
  }
  bool same_batch = grad.ndim() == self.ndim();
  for (int d = 0; same_batch && d < self.ndim() - spatial; ++d) {
    same_batch = grad.shape()[d] == self.shape()[d];
  }
  if (grad.dtype() != self.dtype() || !same_batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": grad_output should be ", DTypeName(self.dtype()),
        " with self's sizes but the last ", spatial, " (self ",
        ShapeToString(self.shape()), "), got ", DTypeName(grad.dtype()), " ",
        ShapeToString(grad.shape())));
  }
  if (indices.dtype() != DType::kInt64 || indices.shape() != grad.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": indices should be int64 ", ShapeToString(grad.shape()),
        " (grad_output's shape), got ", DTypeName(indices.dtype()), " ",
        ShapeToString(indices.shape())));
  }
  return std::vector<TensorSpec>{{self.dtype(), self.shape(), self.device()}};
}

template <int kSpatial>
constexpr const char* BackwardName(bool adaptive) {
  return adaptive ? (kSpatial == 2 ? "adaptive_max_pool2d_backward"
                                   : "adaptive_max_pool3d_backward")
                  : "max_pool3d_with_indices_backward";
}

template <int kSpatial, bool kAdaptive>
Specs InferBackward(absl::Span<const Tensor> in, const Attrs&,
                    const OpContext&) {
  return InferIndicesBackward(in, kSpatial, BackwardName<kSpatial>(kAdaptive));
}

template <int kSpatial>
absl::Status CpuBackward(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs&,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor grad, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor indices, Contiguous(in[2], ctx));
  return cpu::MaxPool2dWithIndicesBackward(AsFlatPlanes(grad, kSpatial),
                                           AsFlatPlanes(indices, kSpatial),
                                           AsFlatPlanes(out[0], kSpatial));
}

template <int kSpatial>
void AddAdaptive(std::vector<OpDef>* ops) {
  OpDef fwd = MakeOp(
      AdaptiveName<kSpatial>(), 1, 1,
      {Required("output_size", AttrType::kInts)},
      absl::StrCat("(values, indices) of ", kSpatial,
                   "-d adaptive max pooling to output_size (one int or ",
                   kSpatial,
                   "): each window's maximum (the first one; NaN propagates) "
                   "and its int64 index into the input's flattened plane, as "
                   "PyTorch's."));
  fwd.num_outputs = 2;
  fwd.infer = InferAdaptive<kSpatial>;
  fwd.cpu = CpuAdaptive<kSpatial>;
  if (kSpatial == 2) {
    fwd.examples = {Example({{2, 3, 5, 7}}, {{"output_size", I{3, 4}}}),
                    Example({{3, 4, 3}}, {{"output_size", I{6, 2}}})};
  } else {
    fwd.examples = {Example({{1, 2, 5, 4, 7}}, {{"output_size", I{3, 2, 4}}}),
                    Example({{2, 3, 4, 5}}, {{"output_size", I{2}}})};
  }
  ops->push_back(std::move(fwd));
  OpDef bwd = MakeOp(
      BackwardName<kSpatial>(true), 3, 3, {},
      absl::StrCat("The gradient of ", AdaptiveName<kSpatial>(),
                   "'s input: grad_output added at the indices into zeros "
                   "shaped as self (indices outside the plane add nothing)."));
  bwd.infer = InferBackward<kSpatial, true>;
  bwd.cpu = CpuBackward<kSpatial>;
  // Zero indices (the examples' integer inputs): every gradient to element
  // 0 of its plane.
  const Shape self = kSpatial == 2 ? Shape{1, 2, 5, 7} : Shape{1, 2, 5, 4, 7};
  const Shape pooled = kSpatial == 2 ? Shape{1, 2, 3, 4} : Shape{1, 2, 3, 2, 4};
  bwd.examples = {Example({pooled, self, pooled}, {},
                          {DType::kFloat32, DType::kFloat32, DType::kInt64})};
  ops->push_back(std::move(bwd));
}

}  // namespace

std::vector<OpDef> AdaptiveMaxPoolOps() {
  std::vector<OpDef> ops;
  AddAdaptive<2>(&ops);
  AddAdaptive<3>(&ops);
  OpDef bwd3 = MakeOp(
      BackwardName<3>(false), 3, 3, MaxPoolAttrs(),
      "The gradient of max_pool3d_with_indices' input: grad_output added at "
      "the indices (into each (n, c) volume's D * H * W elements) into zeros "
      "shaped as self (indices outside the volume add nothing). Its "
      "attributes are max_pool3d's, as PyTorch's schema has them; the shapes "
      "of grad_output and indices carry what they decided.");
  bwd3.infer = InferBackward<3, false>;
  bwd3.cpu = CpuBackward<3>;
  bwd3.examples = {Example({{1, 2, 2, 2, 3}, {1, 2, 4, 5, 6}, {1, 2, 2, 2, 3}},
                           {{"kernel_size", I{2}}},
                           {DType::kFloat32, DType::kFloat32, DType::kInt64})};
  ops.push_back(std::move(bwd3));
  return ops;
}

}  // namespace tensord

// native_layer_norm and its backward: layer_norm as two fused CPU kernels
// (kernels/cpu/layer_norm.h), as PyTorch's rows of the same names (mean and
// rstd shaped as the input with the normalized dims kept as 1s). layer_norm
// (norm_ops.cc) calls the forward on the CPU and its composite on CUDA; both
// rows have CUDA kernels too (cuda_norm.cc, kernels/cuda/norm.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/layer_norm.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using I = std::vector<int64_t>;

// x must end with normalized_shape; in[first..] are normalized_shape-sized
// tensors of x's dtype. Returns the stats' shape (the normalized dims 1).
absl::StatusOr<Shape> CheckShapes(const Tensor& x, absl::Span<const Tensor> in,
                                  size_t first, const Attrs& attrs,
                                  const char* op) {
  TD_RETURN_IF_ERROR(RequireFloating(x, op));
  const I& ns = attrs.Ints("normalized_shape");
  const int k = static_cast<int>(ns.size());
  bool ok = k >= 1 && k <= x.ndim();
  for (int i = 0; ok && i < k; ++i) ok = x.shape()[x.ndim() - k + i] == ns[i];
  for (size_t i = first; ok && i < in.size(); ++i) {
    ok = I(in[i].shape().begin(), in[i].shape().end()) == ns &&
         in[i].dtype() == x.dtype();
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": input ", ShapeToString(x.shape()),
        " must end with normalized_shape ",
        ShapeToString(Shape(ns.begin(), ns.end())),
        " and weight/bias be of that shape and the input's dtype"));
  }
  Shape stats = x.shape();
  for (int d = x.ndim() - k; d < x.ndim(); ++d) stats[d] = 1;
  return stats;
}

// Rows (the stats' numel) and the normalized size.
std::pair<int64_t, int64_t> Rows(const Tensor& x, const Attrs& attrs) {
  int64_t n = 1;
  for (int64_t s : attrs.Ints("normalized_shape")) n *= s;
  return {n == 0 ? 0 : x.numel() / n, n};
}

// (input[, weight[, bias]]) -> (output, mean, rstd).
Specs InferForward(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  const Tensor& x = in[0];
  TD_ASSIGN_OR_RETURN(Shape stats,
                      CheckShapes(x, in, 1, attrs, "native_layer_norm"));
  return std::vector<TensorSpec>{{x.dtype(), x.shape(), x.device()},
                                 {x.dtype(), stats, x.device()},
                                 {x.dtype(), stats, x.device()}};
}

absl::Status CpuForward(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs& attrs,
                        const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  const auto [m, n] = Rows(c[0], attrs);
  const StridedView none{nullptr};
  return cpu::LayerNormForward(
      c[0].view(), m, n, c.size() > 1 ? c[1].view() : none,
      c.size() > 2 ? c[2].view() : none, attrs.Float("eps"), out[0].view(),
      out[1].view(), out[2].view());
}

// (grad, input, mean, rstd[, weight]) -> (grad_input, grad_weight,
// grad_bias).
Specs InferBackward(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  const Tensor& x = in[1];  // in[0], the gradient, is checked below
  const char* op = "native_layer_norm_backward";
  TD_ASSIGN_OR_RETURN(Shape stats, CheckShapes(x, in, 4, attrs, op));
  for (int i : {0, 2, 3}) {
    TD_RETURN_IF_ERROR(
        RequireInput(op, i, in[i], x.dtype(), i == 0 ? x.shape() : stats));
  }
  const I& ns = attrs.Ints("normalized_shape");
  const Shape w(ns.begin(), ns.end());
  return std::vector<TensorSpec>{{x.dtype(), x.shape(), x.device()},
                                 {x.dtype(), w, x.device()},
                                 {x.dtype(), w, x.device()}};
}

absl::Status CpuBackward(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs& attrs,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  const auto [m, n] = Rows(c[1], attrs);
  return cpu::LayerNormBackward(
      c[0].view(), c[1].view(), m, n, c[2].view(), c[3].view(),
      c.size() > 4 ? c[4].view() : StridedView{nullptr}, out[0].view(),
      out[1].view(), out[2].view());
}

}  // namespace

std::vector<OpDef> LayerNormOps() {
  std::vector<OpDef> ops;
  const AttrSpec ns = Required("normalized_shape", AttrType::kInts);
  const AttrSpec eps = Optional("eps", AttrType::kFloat, 1e-5);
  OpDef fwd = MakeOp("native_layer_norm", 1, 3, {ns, eps},
                     "layer_norm fused: (input[, weight[, bias]]) -> (output, "
                     "mean, rstd), the statistics over the last dims "
                     "(normalized_shape), kept as 1s.");
  fwd.num_outputs = 3;
  fwd.infer = InferForward;
  fwd.cpu = CpuForward;
  fwd.examples = {
      Example({{2, 3, 4}, {3, 4}, {3, 4}}, {{"normalized_shape", I{3, 4}}}),
      Example({{5, 6}}, {{"normalized_shape", I{6}}, {"eps", 1e-3}})};
  ops.push_back(std::move(fwd));
  OpDef bwd = MakeOp("native_layer_norm_backward", 4, 5, {ns},
                     "native_layer_norm's gradients: (grad, input, mean, "
                     "rstd[, weight]) -> (grad_input, grad_weight, "
                     "grad_bias).");
  bwd.num_outputs = 3;
  bwd.infer = InferBackward;
  bwd.cpu = CpuBackward;
  bwd.differentiable = false;
  bwd.examples = {Example({{2, 3, 4}, {2, 3, 4}, {2, 1, 1}, {2, 1, 1}, {3, 4}},
                          {{"normalized_shape", I{3, 4}}})};
  bwd.examples[0].positive = true;  // rstd is positive
  ops.push_back(std::move(bwd));
  return ops;
}

}  // namespace tensord

// Neural-net ops: softmax and log_softmax and their backward rows (kernels,
// kernels/cpu/softmax.h; CPU only: CUDA composes the backward); dropout,
// mse_loss, batch_norm and layer_norm written in terms of other rows
// (composites; the norms' in norm_ops.cc). nll_loss and cross_entropy, listed
// here after mse_loss, are in nll_loss_ops.cc.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/softmax.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/loss_reduction.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using Outs = absl::StatusOr<std::vector<Tensor>>;
using I = std::vector<int64_t>;
using Ops = ComposeOps;

Specs InferSoftmax(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  TD_RETURN_IF_ERROR(WrapDim(attrs.Int("dim"), in[0].ndim()).status());
  const DType d = attrs.Has("dtype") ? attrs.GetDType("dtype") : in[0].dtype();
  if (!IsFloating(d)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "softmax needs a floating point dtype, got ", DTypeName(d)));
  }
  return std::vector<TensorSpec>{{d, in[0].shape(), in[0].device()}};
}

template <bool kLog>
absl::Status CpuSoftmax(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs& attrs,
                        const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), in[0].ndim()));
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  TD_ASSIGN_OR_RETURN(x, Contiguous(x, ctx));
  int64_t outer = 1, dim = 1, inner = 1;
  for (int k = 0; k < x.ndim(); ++k) {
    (k < d ? outer : k == d ? dim : inner) *= x.shape()[k];
  }
  if (x.numel() == 0) return absl::OkStatus();
  return cpu::Softmax(x.view(), outer, dim, inner, kLog, out[0].view());
}

// (grad, output) -> grad_input of softmax / log_softmax along dim.
Specs InferSoftmaxBackward(absl::Span<const Tensor> in, const Attrs& attrs,
                           const OpContext&) {
  TD_RETURN_IF_ERROR(WrapDim(attrs.Int("dim"), in[1].ndim()).status());
  TD_RETURN_IF_ERROR(RequireFloating(in[1], "softmax_backward"));
  if (in[0].shape() != in[1].shape() || in[0].dtype() != in[1].dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "softmax_backward: grad ", DTypeName(in[0].dtype()), " ",
        ShapeToString(in[0].shape()), " must match output ",
        DTypeName(in[1].dtype()), " ", ShapeToString(in[1].shape())));
  }
  return std::vector<TensorSpec>{
      {in[1].dtype(), in[1].shape(), in[1].device()}};
}

template <bool kLog>
absl::Status CpuSoftmaxBackward(absl::Span<const Tensor> in,
                                absl::Span<const Tensor> out,
                                const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), in[1].ndim()));
  TD_ASSIGN_OR_RETURN(Tensor dy, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor y, Contiguous(in[1], ctx));
  int64_t outer = 1, dim = 1, inner = 1;
  for (int k = 0; k < y.ndim(); ++k) {
    (k < d ? outer : k == d ? dim : inner) *= y.shape()[k];
  }
  if (y.numel() == 0) return absl::OkStatus();
  return cpu::SoftmaxBackward(dy.view(), y.view(), outer, dim, inner, kLog,
                              out[0].view());
}

Outs Dropout(absl::Span<const Tensor> in, const Attrs& attrs,
             const OpContext& ctx) {
  const double p = attrs.Float("p");
  if (p < 0 || p > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dropout probability has to be between 0 and 1, but got ", p));
  }
  TD_RETURN_IF_ERROR(RequireFloating(in[0], "dropout"));
  if (!attrs.Bool("training") || p == 0) return std::vector<Tensor>{in[0]};
  Ops op{ctx};
  const I shape(in[0].shape().begin(), in[0].shape().end());
  TD_ASSIGN_OR_RETURN(
      Tensor u, op("rand", {}, {{"shape", shape}, {"dtype", DType::kFloat32}}));
  TD_ASSIGN_OR_RETURN(Tensor pt, op.Num(p, u));
  TD_ASSIGN_OR_RETURN(Tensor keep, op("ge", {u, pt}));
  TD_ASSIGN_OR_RETURN(Tensor mask,
                      op("to", {keep}, {{"dtype", in[0].dtype()}}));
  TD_ASSIGN_OR_RETURN(Tensor scale,
                      op.Num(p == 1 ? 0.0 : 1.0 / (1.0 - p), in[0]));
  TD_ASSIGN_OR_RETURN(Tensor y, op("mul", {in[0], mask}));
  TD_ASSIGN_OR_RETURN(y, op("mul", {y, scale}));
  return std::vector<Tensor>{y};
}

Outs MseLoss(absl::Span<const Tensor> in, const Attrs& attrs,
             const OpContext& ctx) {
  TD_RETURN_IF_ERROR(CheckReduction(attrs.String("reduction")));
  TD_RETURN_IF_ERROR(RequireFloating(in[0], "mse_loss"));
  Ops op{ctx};
  TD_ASSIGN_OR_RETURN(Tensor diff, op("sub", {in[0], in[1]}));
  TD_ASSIGN_OR_RETURN(Tensor sq, op("mul", {diff, diff}));
  TD_ASSIGN_OR_RETURN(Tensor out, Reduce(op, sq, attrs.String("reduction")));
  return std::vector<Tensor>{out};
}

}  // namespace

Outs BatchNorm(absl::Span<const Tensor> in, const Attrs& attrs,
               const OpContext& ctx);
Outs LayerNorm(absl::Span<const Tensor> in, const Attrs& attrs,
               const OpContext& ctx);

std::vector<OpDef> NnOps() {
  std::vector<OpDef> ops;
  for (bool log : {false, true}) {
    OpDef def = MakeOp(log ? "log_softmax" : "softmax", 1, 1,
                       {Required("dim", AttrType::kInt),
                        Optional("dtype", AttrType::kDType, std::monostate{})},
                       log ? "log(softmax(input)) along dim, computed stably."
                           : "exp(input) normalised to sum to 1 along dim.");
    def.infer = InferSoftmax;
    def.cpu = log ? CpuSoftmax<true> : CpuSoftmax<false>;
    def.examples = {Example({{2, 3, 4}}, {{"dim", int64_t{1}}}),
                    Example({{2, 5}}, {{"dim", int64_t{-1}}})};
    ops.push_back(std::move(def));
    // The gradient rows derivatives_nn.cc picks on the CPU (PyTorch's
    // _softmax_backward_data, _log_softmax_backward_data).
    OpDef bwd = MakeOp(log ? "log_softmax_backward" : "softmax_backward", 2, 2,
                       {Required("dim", AttrType::kInt)},
                       log ? "log_softmax's input gradient from (grad, "
                             "output): grad - exp(output) * sum(grad, dim)."
                           : "softmax's input gradient from (grad, output): "
                             "output * (grad - sum(grad * output, dim)).");
    bwd.infer = InferSoftmaxBackward;
    bwd.cpu = log ? CpuSoftmaxBackward<true> : CpuSoftmaxBackward<false>;
    bwd.differentiable = false;  // Note [Second-order fused rows]
    bwd.examples = {Example({{2, 3, 4}, {2, 3, 4}}, {{"dim", int64_t{1}}}),
                    Example({{2, 5}, {2, 5}}, {{"dim", int64_t{-1}}})};
    ops.push_back(std::move(bwd));
  }
  OpDef dropout =
      MakeOp("dropout", 1, 1,
             {Optional("p", AttrType::kFloat, 0.5),
              Optional("training", AttrType::kBool, true)},
             "Zeroes elements with probability p and scales the rest "
             "by 1/(1-p) (session generator); identity unless training.");
  dropout.composite = Dropout;
  ops.push_back(std::move(dropout));
  const AttrSpec reduction =
      Optional("reduction", AttrType::kString, std::string("mean"));
  OpDef mse = MakeOp("mse_loss", 2, 2, {reduction}, "Mean squared error.");
  mse.composite = MseLoss;
  mse.examples = {Example({{2, 3}, {2, 3}})};
  ops.push_back(std::move(mse));
  for (OpDef& def : NllLossOps(reduction)) ops.push_back(std::move(def));
  OpDef bn = MakeOp("batch_norm", 1, 5,
                    {Optional("training", AttrType::kBool, false),
                     Optional("momentum", AttrType::kFloat, 0.1),
                     Optional("eps", AttrType::kFloat, 1e-5),
                     Optional("ranks", AttrType::kInts, I{})},
                    "Batch normalisation over all dims but 1: inputs (input, "
                    "running_mean, running_var, weight, bias); running stats "
                    "updated in place when training. ranks: the input ranks a "
                    "module accepts (BatchNorm2d: [4]; empty: any from 2).");
  bn.composite = BatchNorm;
  bn.examples = {
      Example({{4, 3, 2, 2}, {3}, {3}, {3}, {3}}, {{"training", true}}),
      Example({{4, 3}, {3}, {3}})};
  ops.push_back(std::move(bn));
  OpDef ln = MakeOp("layer_norm", 1, 3,
                    {Required("normalized_shape", AttrType::kInts),
                     Optional("eps", AttrType::kFloat, 1e-5)},
                    "Normalisation over the last dims (normalized_shape) with "
                    "optional elementwise weight and bias.");
  ln.composite = LayerNorm;
  ln.examples = {
      Example({{2, 3, 4}, {3, 4}, {3, 4}}, {{"normalized_shape", I{3, 4}}})};
  ops.push_back(std::move(ln));
  return ops;
}

}  // namespace tensord

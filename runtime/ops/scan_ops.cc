// The one-dim rows PyTorch defines by its own loops: cummax/cummin (values
// and int64 indices), logcumsumexp, mode along a dim, and searchsorted.
// Kernels: kernels/cpu/sort.h and kernels/cuda/sort.h (their per-element
// rules, shared: runtime/core/scan_math.h), chosen by the output's device
// (cuda_sort.cc's Device* switches), so each row serves both devices.
// Gradients (derivatives_shape.cc): cummax/cummin and mode send the gradient
// back to the indices they chose (scatter_add), logcumsumexp has PyTorch's
// formula; searchsorted has none.
#include <climits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/cuda_kernels.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;

// The kernels' dim: a 0-d tensor is seen as [1].
absl::StatusOr<int> KernelDim(const Tensor& t, const Attrs& attrs) {
  TD_ASSIGN_OR_RETURN(int d, OneDim(t, attrs));
  return t.ndim() == 0 ? 0 : d;
}

Specs InferCumExtreme(absl::Span<const Tensor> in, const Attrs& attrs,
                      const OpContext&) {
  TD_RETURN_IF_ERROR(OneDim(in[0], attrs).status());
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[0].shape(), in[0].device()},
      {DType::kInt64, in[0].shape(), in[0].device()}};
}

template <bool kMax>
absl::Status CumExtreme(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs& attrs,
                        const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, KernelDim(in[0], attrs));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  return DeviceCumExtreme(out[0], ctx, x.view(), d, kMax, out[0].view(),
                          out[1].view());
}

// logcumsumexp: floating inputs only, as PyTorch ("logcumsumexp_out_cpu" not
// implemented for integers).
Specs InferLogCumSumExp(absl::Span<const Tensor> in, const Attrs& attrs,
                        const OpContext&) {
  TD_RETURN_IF_ERROR(OneDim(in[0], attrs).status());
  TD_RETURN_IF_ERROR(RequireFloating(in[0], "logcumsumexp"));
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[0].shape(), in[0].device()}};
}

absl::Status LogCumSumExp(absl::Span<const Tensor> in,
                          absl::Span<const Tensor> out, const Attrs& attrs,
                          const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, KernelDim(in[0], attrs));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  return DeviceLogCumSumExp(out[0], ctx, x.view(), d, out[0].view());
}

// mode(input, dim, keepdim): the most frequent value of each row along dim
// and the index of its last occurrence; a row must not be empty.
Specs InferMode(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext&) {
  const Tensor& x = in[0];
  TD_ASSIGN_OR_RETURN(int d, OneDim(x, attrs));
  if (x.ndim() == 0) {
    return std::vector<TensorSpec>{{x.dtype(), x.shape(), x.device()},
                                   {DType::kInt64, x.shape(), x.device()}};
  }
  if (x.shape()[d] == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mode(): Expected reduction dim ", d,
        " to have non-zero size (input shape ", ShapeToString(x.shape()), ")"));
  }
  Shape shape = x.shape();
  if (attrs.Bool("keepdim")) {
    shape[d] = 1;
  } else {
    shape.erase(shape.begin() + d);
  }
  return std::vector<TensorSpec>{{x.dtype(), shape, x.device()},
                                 {DType::kInt64, shape, x.device()}};
}

// The outputs are contiguous, so with or without keepdim they are laid out
// as [outer, 1, inner] around dim: the kernels' view of them.
absl::Status Mode(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                  const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, KernelDim(in[0], attrs));
  if (out[0].numel() == 0) return absl::OkStatus();
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  return DeviceMode(out[0], ctx, x.view(), d, out[0].view(), out[1].view());
}

// searchsorted(sorted_sequence, input[, sorter]; out_int32, right, side) as
// torch.searchsorted, with its checks and wording. Both tensors are
// promoted to their result type; sorter (int64, the boundaries' shape)
// names each row's ascending order.
Specs InferSearchSorted(absl::Span<const Tensor> in, const Attrs& attrs,
                        const OpContext&) {
  const Tensor &bd = in[0], &x = in[1];
  const std::string& side = attrs.String("side");
  if (!side.empty()) {
    if (side != "left" && side != "right") {
      return absl::InvalidArgumentError(absl::StrCat(
          "torch.searchsorted(): side can only be 'left' or 'right' but got ",
          side));
    }
    if (attrs.Bool("right") && side != "right") {
      return absl::InvalidArgumentError(absl::StrCat(
          "torch.searchsorted(): side and right can't be set to opposites, "
          "got side of ",
          side, " while right was True"));
    }
  }
  if (in.size() == 3) {
    const Tensor& sorter = in[2];
    if (sorter.shape() != bd.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "torch.searchsorted(): boundary and sorter must have the same size, "
          "but got boundary tensor ",
          ShapeToString(bd.shape()), " and got sorter tensor ",
          ShapeToString(sorter.shape())));
    }
    if (sorter.dtype() != DType::kInt64) {
      return absl::InvalidArgumentError(absl::StrCat(
          "torch.searchsorted(): sorter must be a tensor of long dtype but got "
          "dtype ",
          DTypeName(sorter.dtype())));
    }
  }
  if (bd.ndim() == 0) {
    return absl::InvalidArgumentError(
        "torch.searchsorted(): boundaries tensor should have positive "
        "dimension, but got 0 dimension");
  }
  if (x.ndim() == 0 && bd.ndim() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "torch.searchsorted(): input value can be a scalar only when "
        "boundaries tensor dimension is 1, but we got boundaries tensor dim(",
        bd.ndim(), ") and input value's dim(0) numel(1)"));
  }
  bool leading = bd.ndim() == x.ndim();
  for (int i = 0; leading && i + 1 < bd.ndim(); ++i) {
    leading = bd.shape()[i] == x.shape()[i];
  }
  if (bd.ndim() != 1 && !leading) {
    return absl::InvalidArgumentError(absl::StrCat(
        "torch.searchsorted(): boundaries tensor should be 1 dimension or the "
        "first N-1 dimensions of boundaries tensor and input value tensor "
        "must match, but we got boundaries tensor ",
        ShapeToString(bd.shape()), " and input value tensor ",
        ShapeToString(x.shape())));
  }
  const bool int32 = attrs.Bool("out_int32");
  if (int32 && bd.shape().back() >= INT_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "torch.searchsorted(): the size of boundaries' last dimension should "
        "be less than ",
        INT_MAX, ", but we got ", bd.shape().back()));
  }
  if (ResultType(in.subspan(0, 2)) == DType::kBool) {
    return absl::InvalidArgumentError(
        "torch.searchsorted(): bool boundaries and values are not supported, "
        "as in PyTorch (\"searchsorted_out_cpu\" not implemented for 'Bool')");
  }
  return std::vector<TensorSpec>{
      {int32 ? DType::kInt32 : DType::kInt64, x.shape(), x.device()}};
}

absl::Status SearchSorted(absl::Span<const Tensor> in,
                          absl::Span<const Tensor> out, const Attrs& attrs,
                          const OpContext& ctx) {
  const DType common = ResultType(in.subspan(0, 2));
  TD_ASSIGN_OR_RETURN(Tensor bd, CastTo(in[0], common, ctx));
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[1], common, ctx));
  TD_ASSIGN_OR_RETURN(bd, Contiguous(bd, ctx));
  if (in.size() == 3 && bd.numel() > 0) {
    // Each row in its sorted order: the boundaries gathered by the sorter
    // (the index rows' gather, which checks the sorter's values), then
    // searched as they are.
    TD_ASSIGN_OR_RETURN(Tensor sorter, Contiguous(in[2], ctx));
    TD_ASSIGN_OR_RETURN(Tensor sorted, Tensor::Empty(bd.device(), bd.dtype(),
                                                     bd.shape(), ctx.alloc));
    absl::Status gathered = DeviceGather(sorted, ctx, bd.view(), bd.ndim() - 1,
                                         sorter.view(), sorted.view());
    if (!gathered.ok()) {
      return absl::Status(
          gathered.code(),
          absl::StrCat("torch.searchsorted(): sorter index out of range (",
                       gathered.message(), ")"));
    }
    bd = std::move(sorted);
  }
  TD_ASSIGN_OR_RETURN(x, Contiguous(x, ctx));
  const bool right = attrs.Bool("right") || attrs.String("side") == "right";
  return DeviceSearchSorted(out[0], ctx, bd.view(), x.view(), right,
                            out[0].view());
}

OpDef Row(const char* name, int min_inputs, int max_inputs,
          std::vector<AttrSpec> attrs, InferFn infer, KernelFn kernel,
          const char* doc) {
  OpDef def = MakeOp(name, min_inputs, max_inputs, std::move(attrs), doc);
  def.infer = infer;
  def.cpu = kernel;
  def.cuda = CudaKernelsBuilt() ? kernel : nullptr;
  return def;
}

}  // namespace

std::vector<OpDef> ScanOps() {
  std::vector<OpDef> ops;
  const AttrSpec dim = Required("dim", AttrType::kInt);
  for (bool is_max : {true, false}) {
    OpDef def = Row(
        is_max ? "cummax" : "cummin", 1, 1, {dim}, InferCumExtreme,
        is_max ? CumExtreme<true> : CumExtreme<false>,
        is_max ? "(values, indices): the running maximum along dim and where "
                 "it was taken (ties: the later index; NaN propagates)."
               : "(values, indices): the running minimum along dim and where "
                 "it was taken (ties: the later index; NaN propagates).");
    def.num_outputs = 2;
    def.examples = {Example({{3, 4}}, {{"dim", int64_t{1}}}),
                    Example({{2, 3, 4}}, {{"dim", int64_t{-3}}})};
    ops.push_back(std::move(def));
  }
  OpDef lcse = Row("logcumsumexp", 1, 1, {dim}, InferLogCumSumExp, LogCumSumExp,
                   "log(cumsum(exp(input))) along dim, computed stably "
                   "(accumulated in double; -inf entries add nothing).");
  lcse.examples = {Example({{3, 4}}, {{"dim", int64_t{1}}}),
                   Example({{2, 3, 4}}, {{"dim", int64_t{0}}})};
  ops.push_back(std::move(lcse));
  OpDef mode = Row("mode", 1, 1,
                   {Optional("dim", AttrType::kInt, int64_t{-1}),
                    Optional("keepdim", AttrType::kBool, false)},
                   InferMode, Mode,
                   "(values, indices): the most frequent value along dim (the "
                   "smallest of equally frequent ones) and the index of its "
                   "last occurrence, as PyTorch's CPU mode.");
  mode.num_outputs = 2;
  mode.examples = {Example({{3, 5}}),
                   Example({{3, 4}}, {{"dim", int64_t{0}}, {"keepdim", true}})};
  ops.push_back(std::move(mode));
  OpDef ss = Row("searchsorted", 2, 3,
                 {Optional("out_int32", AttrType::kBool, false),
                  Optional("right", AttrType::kBool, false),
                  Optional("side", AttrType::kString, std::string())},
                 InferSearchSorted, SearchSorted,
                 "torch.searchsorted(sorted_sequence, input[, sorter]): where "
                 "each input value goes in its row of sorted_sequence (1-d: "
                 "one row for all) to keep it sorted; right / side='right' "
                 "places it after equal boundaries. int64 (int32 with "
                 "out_int32).");
  ss.differentiable = false;
  ss.examples = {Example({{6}, {3, 4}}),
                 Example({{3, 5}, {3, 2}}, {{"right", true}})};
  ops.push_back(std::move(ss));
  return ops;
}

}  // namespace tensord

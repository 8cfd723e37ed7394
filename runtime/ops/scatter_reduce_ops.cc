// scatter_reduce and index_reduce, torch.scatter_reduce's and
// Tensor.index_reduce's reductions (sum, prod, mean, amax, amin) into the
// positions an int64 index names. One kernel row, scatter_reduce
// (kernels/cpu/index.h's ScatterReduce: deterministic; on CUDA atomics and
// compare-and-swap loops); index_reduce is a composite onto it. Not
// differentiable here: the PyTorch device runs PyTorch's autograd on the
// client, and the native clients have no gradient for them yet.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/cuda_kernels.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/index_checks.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using Outs = absl::StatusOr<std::vector<Tensor>>;

// reduce="sum"|"prod"|"mean"|"amax"|"amin" as torch.scatter_reduce.
absl::StatusOr<ReduceOp> ScatterReduceOp(const std::string& reduce,
                                         const char* what) {
  if (reduce == "sum") return ReduceOp::kSum;
  if (reduce == "prod") return ReduceOp::kProd;
  if (reduce == "mean") return ReduceOp::kMean;
  if (reduce == "amax") return ReduceOp::kMax;
  if (reduce == "amin") return ReduceOp::kMin;
  return absl::InvalidArgumentError(
      absl::StrCat(what,
                   "(): reduce argument must be either sum, prod, mean, amax "
                   "or amin, got ",
                   reduce));
}

// scatter_reduce(input, index, src; dim, reduce, include_self): src is a
// tensor of index's rank at least index's size (PyTorch takes no scalar src
// here); bool has no mean.
Specs InferScatterReduce(absl::Span<const Tensor> in, const Attrs& attrs,
                         const OpContext&) {
  TD_RETURN_IF_ERROR(RequireInt64(in[1], "scatter_reduce"));
  TD_ASSIGN_OR_RETURN(
      ReduceOp op, ScatterReduceOp(attrs.String("reduce"), "scatter_reduce"));
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), in[0].ndim()));
  TD_RETURN_IF_ERROR(CheckIndexShape(in[0], in[1], d, "scatter_reduce"));
  TD_RETURN_IF_ERROR(CheckIndexShape(in[2], in[1], -1, "scatter_reduce"));
  if (op == ReduceOp::kMean && in[0].dtype() == DType::kBool) {
    return absl::InvalidArgumentError(
        "scatter_reduce(): reduce='mean' does not support dtype bool");
  }
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[0].shape(), in[0].device()}};
}

absl::Status CpuScatterReduce(absl::Span<const Tensor> in,
                              absl::Span<const Tensor> out, const Attrs& attrs,
                              const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), in[0].ndim()));
  TD_ASSIGN_OR_RETURN(
      ReduceOp op, ScatterReduceOp(attrs.String("reduce"), "scatter_reduce"));
  TD_RETURN_IF_ERROR(CopyOnDevice(out[0].device(), in[0].view(), out[0].view(),
                                  ctx.alloc.stream));
  if (in[1].numel() == 0) return absl::OkStatus();
  TD_ASSIGN_OR_RETURN(Tensor idx, Contiguous(in[1], ctx));
  TD_ASSIGN_OR_RETURN(Tensor src, CastTo(in[2], out[0].dtype(), ctx));
  TD_ASSIGN_OR_RETURN(src, Contiguous(src, ctx));
  return DeviceScatterReduce(out[0], ctx, AtLeast1d(out[0].view()), d,
                             AtLeast1d(idx.view()), AtLeast1d(src.view()), op,
                             attrs.Bool("include_self"), "scatter_reduce");
}

// index_reduce(input, index, source; dim, reduce, include_self) as
// torch.index_reduce: source's slice j along dim reduced into input's slice
// index[j]; scatter_reduce with index laid along dim and expanded to
// source's shape. reduce is prod, mean, amax or amin (PyTorch has no sum).
Outs IndexReduce(absl::Span<const Tensor> in, const Attrs& attrs,
                 const OpContext& ctx) {
  const Tensor &x = in[0], &index = in[1], &source = in[2];
  const std::string& reduce = attrs.String("reduce");
  if (reduce != "prod" && reduce != "mean" && reduce != "amax" &&
      reduce != "amin") {
    return absl::InvalidArgumentError(absl::StrCat(
        "index_reduce(): Expected reduce to be one of prod, mean, amax or "
        "amin but got ",
        reduce, "."));
  }
  TD_RETURN_IF_ERROR(RequireInt64(index, "index_reduce"));
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), x.ndim()));
  const int64_t slices = source.ndim() == 0 ? 1 : source.shape()[d];
  bool fits =
      index.ndim() <= 1 && index.numel() == slices &&
      (source.ndim() == x.ndim() || (source.ndim() <= 1 && x.ndim() <= 1));
  for (int k = 0; fits && k < source.ndim() && k < x.ndim(); ++k) {
    fits = k == d || source.shape()[k] == x.shape()[k];
  }
  if (!fits) {
    return absl::InvalidArgumentError(
        absl::StrCat("index_reduce(): source ", ShapeToString(source.shape()),
                     " must have input ", ShapeToString(x.shape()),
                     "'s shape outside dim ", d,
                     " and one slice along it per entry of the "
                     "1-d index ",
                     ShapeToString(index.shape())));
  }
  Tensor idx = index;
  if (source.ndim() > 0) {
    std::vector<int64_t> lay(source.ndim(), 1),
        shape(source.shape().begin(), source.shape().end());
    lay[d] = -1;
    TD_ASSIGN_OR_RETURN(idx, Call1("reshape", {index}, {{"shape", lay}}, ctx));
    TD_ASSIGN_OR_RETURN(idx, Call1("expand", {idx}, {{"size", shape}}, ctx));
  } else if (index.ndim() == 1) {
    TD_ASSIGN_OR_RETURN(idx, Call1("reshape", {index},
                                   {{"shape", std::vector<int64_t>{}}}, ctx));
  }
  auto out = Call1("scatter_reduce", {x, idx, source},
                   {{"dim", int64_t{d}},
                    {"reduce", reduce},
                    {"include_self", attrs.Bool("include_self")}},
                   ctx);
  if (!out.ok()) {
    return absl::Status(
        out.status().code(),
        absl::StrCat("index_reduce(): ", out.status().message()));
  }
  return std::vector<Tensor>{*std::move(out)};
}

}  // namespace

std::vector<OpDef> ScatterReduceOps() {
  const AttrSpec dim = Required("dim", AttrType::kInt);
  std::vector<OpDef> ops;
  const AttrSpec include_self = Optional("include_self", AttrType::kBool, true);
  OpDef sr = MakeOp(
      "scatter_reduce", 3, 3,
      {dim, Required("reduce", AttrType::kString), include_self},
      "torch.scatter_reduce: input with src reduced (sum, prod, mean, amax, "
      "amin) into the positions index names along dim; include_self=False "
      "leaves input's value out of them. Deterministic on the CPU; CUDA sums "
      "and means are atomic adds.");
  sr.infer = InferScatterReduce;
  sr.cpu = CpuScatterReduce;
  sr.cuda = CudaKernelsBuilt() ? CpuScatterReduce : nullptr;
  sr.differentiable = false;  // PyTorch's autograd runs on the client
  sr.examples = {Example({{3, 4}, {2, 4}, {2, 4}},
                         {{"dim", int64_t{0}}, {"reduce", std::string("amax")}},
                         {DType::kFloat32, DType::kInt64, DType::kFloat32}),
                 Example({{3, 4}, {3, 2}, {3, 3}},
                         {{"dim", int64_t{1}},
                          {"reduce", std::string("mean")},
                          {"include_self", false}},
                         {DType::kFloat32, DType::kInt64, DType::kFloat32})};
  ops.push_back(std::move(sr));
  OpDef ir = MakeOp(
      "index_reduce", 3, 3,
      {dim, Required("reduce", AttrType::kString), include_self},
      "torch.index_reduce: source's slices along dim reduced (prod, mean, "
      "amax, amin) into input's slices that the 1-d int64 index names.");
  ir.composite = IndexReduce;
  ir.differentiable = false;
  ir.examples = {Example({{3, 4}, {5}, {3, 5}},
                         {{"dim", int64_t{1}}, {"reduce", std::string("prod")}},
                         {DType::kFloat32, DType::kInt64, DType::kFloat32})};
  ops.push_back(std::move(ir));
  return ops;
}

}  // namespace tensord

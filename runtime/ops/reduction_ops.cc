// Reductions over dims with keepdim: sum, mean.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/reduce.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

// The output shape in keepdim layout (size 1 on reduced dims).
Shape KeepDimShape(const Tensor& in, const std::vector<bool>& reduced) {
  Shape shape = in.shape();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) shape[d] = 1;
  }
  return shape;
}

Shape FinalShape(const Tensor& in, const std::vector<bool>& reduced,
                 bool keepdim) {
  if (keepdim) return KeepDimShape(in, reduced);
  Shape shape;
  for (size_t d = 0; d < in.shape().size(); ++d) {
    if (!reduced[d]) shape.push_back(in.shape()[d]);
  }
  return shape;
}

// sum: integers and bool accumulate to int64, as in PyTorch.
DType SumType(DType in) { return IsFloating(in) ? in : DType::kInt64; }

template <bool kMean>
absl::StatusOr<std::vector<TensorSpec>> InferReduce(absl::Span<const Tensor> in,
                                                    const Attrs& attrs,
                                                    const OpContext&) {
  TD_ASSIGN_OR_RETURN(std::vector<bool> reduced, ReducedDims(attrs, in[0].ndim()));
  if (kMean && !IsFloating(in[0].dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mean needs a floating input, got ", DTypeName(in[0].dtype()),
        " (convert with .float() first)"));
  }
  return std::vector<TensorSpec>{{kMean ? in[0].dtype() : SumType(in[0].dtype()),
                                  FinalShape(in[0], reduced, attrs.Bool("keepdim")),
                                  in[0].device()}};
}

template <cpu::ReduceOp kOp>
absl::Status CpuReduce(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                       const Attrs& attrs, const OpContext&) {
  TD_ASSIGN_OR_RETURN(std::vector<bool> reduced, ReducedDims(attrs, in[0].ndim()));
  if (in[0].ndim() == 0) {
    // A 0-d reduction is the identity on its one element (sum of x is x).
    StridedView src = in[0].view(), dst = out[0].view();
    src.ndim = dst.ndim = 1;
    src.sizes[0] = dst.sizes[0] = 1;
    src.strides[0] = dst.strides[0] = 1;
    std::unique_ptr<bool[]> mask(new bool[1]{true});
    return cpu::Reduce(kOp, src, mask.get(), dst);
  }
  // View the output in keepdim layout so the kernel sees equal ranks.
  Tensor keep = out[0].AsStrided(KeepDimShape(in[0], reduced),
                                 ContiguousStrides(KeepDimShape(in[0], reduced)),
                                 out[0].offset());
  std::unique_ptr<bool[]> mask(new bool[reduced.size()]);
  for (size_t d = 0; d < reduced.size(); ++d) mask[d] = reduced[d];
  return cpu::Reduce(kOp, in[0].view(), mask.get(), keep.view());
}

OpDef ReduceRow(std::string name, InferFn infer, KernelFn cpu_fn,
                std::string doc) {
  OpDef def;
  def.name = std::move(name);
  def.min_inputs = def.max_inputs = 1;
  def.attrs = {Optional("dim", AttrType::kInts, std::vector<int64_t>{}),
               Optional("keepdim", AttrType::kBool, false)};
  def.infer = infer;
  def.cpu = cpu_fn;
  def.differentiable = true;
  def.doc = std::move(doc);
  return def;
}

}  // namespace

std::vector<OpDef> ReductionOps() {
  std::vector<OpDef> ops;
  ops.push_back(ReduceRow("sum", InferReduce<false>, CpuReduce<cpu::ReduceOp::kSum>,
                          "Sum over dim (all dims if empty)."));
  ops.push_back(ReduceRow("mean", InferReduce<true>,
                          CpuReduce<cpu::ReduceOp::kMean>,
                          "Mean over dim (all dims if empty)."));
  return ops;
}

}  // namespace tensord

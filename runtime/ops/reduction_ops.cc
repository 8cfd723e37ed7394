// Reductions over dims with keepdim: sum, mean, prod, amax, amin, all, any,
// max/min (full, or over one dim with indices), argmax, argmin, var, std,
// norm, logsumexp.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/reduce.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/cuda_kernels.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;

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

// The reduced dims: attribute "dim" as ints ([] = all) or as an optional
// int (None = all).
absl::StatusOr<std::vector<bool>> Reduced(const Tensor& t, const Attrs& attrs,
                                          bool int_dim) {
  if (!int_dim) return ReducedDims(attrs, t.ndim());
  std::vector<bool> reduced(t.ndim(), !attrs.Has("dim"));
  if (attrs.Has("dim")) {
    TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), t.ndim()));
    if (t.ndim() > 0) reduced[d] = true;
  }
  return reduced;
}

enum class Kind {
  kSum,
  kMean,
  kProd,
  kMax,
  kMin,
  kAll,
  kAny,
  kArgMax,
  kArgMin,
  kVar,
  kStd,
  kNorm,
  kLogSumExp
};

bool IntDim(Kind k) { return k == Kind::kArgMax || k == Kind::kArgMin; }

DType OutType(Kind k, DType in, const Attrs& attrs) {
  switch (k) {
    case Kind::kSum:
    case Kind::kProd:
      if (attrs.Has("dtype")) return attrs.GetDType("dtype");
      return IsFloating(in) ? in : DType::kInt64;
    case Kind::kMean:
      return attrs.Has("dtype") ? attrs.GetDType("dtype") : in;
    case Kind::kMax:
    case Kind::kMin:
      return in;
    case Kind::kAll:
    case Kind::kAny:
      return DType::kBool;
    case Kind::kArgMax:
    case Kind::kArgMin:
      return DType::kInt64;
    default:
      return IsFloating(in) ? in : kDefaultFloat;
  }
}

template <Kind kKind>
Specs InferReduce(absl::Span<const Tensor> in, const Attrs& attrs,
                  const OpContext&) {
  TD_ASSIGN_OR_RETURN(std::vector<bool> reduced,
                      Reduced(in[0], attrs, IntDim(kKind)));
  const DType out = OutType(kKind, in[0].dtype(), attrs);
  if (kKind == Kind::kMean && !IsFloating(out)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mean(): could not infer output dtype. Input dtype must be either a "
        "floating point or complex dtype. Got: ",
        DTypeName(in[0].dtype())));
  }
  if ((kKind == Kind::kMax || kKind == Kind::kMin || kKind == Kind::kArgMax ||
       kKind == Kind::kArgMin) &&
      in[0].numel() == 0) {
    bool empty_reduced = in[0].ndim() == 0;
    for (int d = 0; d < in[0].ndim(); ++d) {
      empty_reduced |= reduced[d] && in[0].shape()[d] == 0;
    }
    if (empty_reduced) {
      return absl::InvalidArgumentError(
          "Expected reduction dim to have non-zero size (max/min/argmax/argmin "
          "of an empty tensor has no identity)");
    }
  }
  return std::vector<TensorSpec>{
      {out, FinalShape(in[0], reduced, attrs.Bool("keepdim")), in[0].device()}};
}

// The output viewed in keepdim layout; 0-d inputs seen as [1].
struct Prepared {
  StridedView in, out;
  std::unique_ptr<bool[]> mask;
};

Prepared Prepare(const Tensor& in, const Tensor& out,
                 const std::vector<bool>& reduced) {
  Prepared p;
  if (in.ndim() == 0) {
    p.in = in.view();
    p.out = out.view();
    p.in.ndim = p.out.ndim = 1;
    p.in.sizes[0] = p.out.sizes[0] = 1;
    p.in.strides[0] = p.out.strides[0] = 1;
    p.mask.reset(new bool[1]{true});
    return p;
  }
  const Shape keep = KeepDimShape(in, reduced);
  p.in = in.view();
  p.out = out.AsStrided(keep, ContiguousStrides(keep), out.offset()).view();
  p.mask.reset(new bool[reduced.size()]);
  for (size_t d = 0; d < reduced.size(); ++d) p.mask[d] = reduced[d];
  return p;
}

template <Kind kKind>
absl::Status CpuReduce(absl::Span<const Tensor> in,
                       absl::Span<const Tensor> out, const Attrs& attrs,
                       const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<bool> reduced,
                      Reduced(in[0], attrs, IntDim(kKind)));
  Tensor x = in[0];
  if (kKind >= Kind::kVar || kKind == Kind::kMean) {
    TD_ASSIGN_OR_RETURN(x, CastTo(x, out[0].dtype(), ctx));
  }
  Prepared p = Prepare(x, out[0], reduced);
  switch (kKind) {
    case Kind::kSum:
      return DeviceReduce(out[0], ctx, cpu::ReduceOp::kSum, p.in, p.mask.get(),
                          p.out);
    case Kind::kMean:
      return DeviceReduce(out[0], ctx, cpu::ReduceOp::kMean, p.in, p.mask.get(),
                          p.out);
    case Kind::kProd:
      return DeviceReduce(out[0], ctx, cpu::ReduceOp::kProd, p.in, p.mask.get(),
                          p.out);
    case Kind::kMax:
      return DeviceReduce(out[0], ctx, cpu::ReduceOp::kMax, p.in, p.mask.get(),
                          p.out);
    case Kind::kMin:
      return DeviceReduce(out[0], ctx, cpu::ReduceOp::kMin, p.in, p.mask.get(),
                          p.out);
    case Kind::kAll:
      return DeviceReduce(out[0], ctx, cpu::ReduceOp::kAll, p.in, p.mask.get(),
                          p.out);
    case Kind::kAny:
      return DeviceReduce(out[0], ctx, cpu::ReduceOp::kAny, p.in, p.mask.get(),
                          p.out);
    case Kind::kArgMax:
      return DeviceReduceStat(out[0], ctx, cpu::StatOp::kArgMax, p.in,
                              p.mask.get(), 0, p.out);
    case Kind::kArgMin:
      return DeviceReduceStat(out[0], ctx, cpu::StatOp::kArgMin, p.in,
                              p.mask.get(), 0, p.out);
    case Kind::kVar:
    case Kind::kStd: {
      const double correction = attrs.Has("correction")
                                    ? attrs.Float("correction")
                                    : (attrs.Bool("unbiased") ? 1.0 : 0.0);
      return DeviceReduceStat(
          out[0], ctx,
          kKind == Kind::kVar ? cpu::StatOp::kVar : cpu::StatOp::kStd, p.in,
          p.mask.get(), correction, p.out);
    }
    case Kind::kNorm:
      return DeviceReduceStat(out[0], ctx, cpu::StatOp::kNorm, p.in,
                              p.mask.get(), attrs.Float("p"), p.out);
    case Kind::kLogSumExp:
      return DeviceReduceStat(out[0], ctx, cpu::StatOp::kLogSumExp, p.in,
                              p.mask.get(), 0, p.out);
  }
  return absl::OkStatus();
}

// max/min: one input and no dim: the full reduction; with dim: (values,
// indices); two inputs: elementwise maximum/minimum.
template <bool kMax>
absl::StatusOr<std::vector<Tensor>> MaxMin(absl::Span<const Tensor> in,
                                           const Attrs& attrs,
                                           const OpContext& ctx) {
  const bool keepdim = attrs.Bool("keepdim");
  if (in.size() == 2) {
    if (attrs.Has("dim")) {
      return absl::InvalidArgumentError("max/min of two tensors takes no dim");
    }
    TD_ASSIGN_OR_RETURN(
        Tensor t, Call1(kMax ? "maximum" : "minimum", {in[0], in[1]}, {}, ctx));
    return std::vector<Tensor>{t};
  }
  if (!attrs.Has("dim")) {
    TD_ASSIGN_OR_RETURN(Tensor t,
                        Call1(kMax ? "amax" : "amin", {in[0]}, {}, ctx));
    return std::vector<Tensor>{t};
  }
  const int64_t dim = attrs.Int("dim");
  TD_ASSIGN_OR_RETURN(Tensor idx,
                      Call1(kMax ? "argmax" : "argmin", {in[0]},
                            {{"dim", dim}, {"keepdim", keepdim}}, ctx));
  TD_ASSIGN_OR_RETURN(
      Tensor values,
      Call1(kMax ? "amax" : "amin", {in[0]},
            {{"dim", std::vector<int64_t>{dim}}, {"keepdim", keepdim}}, ctx));
  return std::vector<Tensor>{values, idx};
}

std::vector<AttrSpec> DimAttrs(bool int_dim) {
  return {int_dim ? Optional("dim", AttrType::kInt, std::monostate{})
                  : Optional("dim", AttrType::kInts, std::vector<int64_t>{}),
          Optional("keepdim", AttrType::kBool, false)};
}

template <Kind kKind>
OpDef ReduceRow(std::string name, std::string doc,
                std::vector<AttrSpec> extra = {}) {
  std::vector<AttrSpec> attrs = DimAttrs(IntDim(kKind));
  attrs.insert(attrs.end(), extra.begin(), extra.end());
  OpDef def = MakeOp(std::move(name), 1, 1, std::move(attrs), std::move(doc));
  def.infer = InferReduce<kKind>;
  def.cpu = CpuReduce<kKind>;
  def.cuda = CudaKernelsBuilt() ? CpuReduce<kKind> : nullptr;  // both devices
  const AttrValue one_dim = IntDim(kKind) ? AttrValue(int64_t{1})
                                          : AttrValue(std::vector<int64_t>{1});
  def.examples = {Example({{2, 3, 4}}),
                  Example({{2, 3, 4}}, {{"dim", one_dim}, {"keepdim", true}})};
  return def;
}

}  // namespace

std::vector<OpDef> ReductionOps() {
  const AttrSpec dtype = Optional("dtype", AttrType::kDType, std::monostate{});
  std::vector<OpDef> ops;
  ops.push_back(ReduceRow<Kind::kSum>(
      "sum", "Sum over dim (all dims if empty).", {dtype}));
  ops.push_back(ReduceRow<Kind::kMean>(
      "mean", "Mean over dim (all dims if empty).", {dtype}));
  ops.push_back(ReduceRow<Kind::kProd>(
      "prod", "Product over dim (all dims if empty).", {dtype}));
  ops.push_back(
      ReduceRow<Kind::kMax>("amax", "Maximum over dim (all dims if empty)."));
  ops.push_back(
      ReduceRow<Kind::kMin>("amin", "Minimum over dim (all dims if empty)."));
  OpDef all =
      ReduceRow<Kind::kAll>("all", "Whether every element is nonzero (bool).");
  all.differentiable = false;
  ops.push_back(std::move(all));
  OpDef any =
      ReduceRow<Kind::kAny>("any", "Whether any element is nonzero (bool).");
  any.differentiable = false;
  ops.push_back(std::move(any));
  OpDef argmax = ReduceRow<Kind::kArgMax>(
      "argmax",
      "Index of the maximum along dim (of the flattened input if None).");
  argmax.differentiable = false;
  ops.push_back(std::move(argmax));
  OpDef argmin = ReduceRow<Kind::kArgMin>(
      "argmin",
      "Index of the minimum along dim (of the flattened input if None).");
  argmin.differentiable = false;
  ops.push_back(std::move(argmin));
  const std::vector<AttrSpec> var_attrs = {
      Optional("unbiased", AttrType::kBool, true),
      Optional("correction", AttrType::kFloat, std::monostate{})};
  ops.push_back(ReduceRow<Kind::kVar>(
      "var",
      "Variance over dim with Bessel's correction (unbiased) or `correction`.",
      var_attrs));
  ops.push_back(
      ReduceRow<Kind::kStd>("std", "Standard deviation (see var).", var_attrs));
  OpDef norm =
      ReduceRow<Kind::kNorm>("norm", "The p-norm over dim (p=2; inf allowed).");
  norm.attrs.insert(norm.attrs.begin(), Optional("p", AttrType::kFloat, 2.0));
  ops.push_back(std::move(norm));
  ops.push_back(ReduceRow<Kind::kLogSumExp>(
      "logsumexp", "log(sum(exp(input))) over dim, computed stably."));
  for (bool is_max : {true, false}) {
    OpDef def =
        MakeOp(is_max ? "max" : "min", 1, 2, DimAttrs(true),
               is_max ? "The maximum: of all elements; over dim as "
                        "(values, indices); or elementwise of two tensors."
                      : "The minimum: of all elements; over dim as "
                        "(values, indices); or elementwise of two tensors.");
    def.composite = is_max ? MaxMin<true> : MaxMin<false>;
    def.num_outputs = -1;
    def.examples = {Example({{2, 3}}), Example({{2, 3}}, {{"dim", int64_t{1}}}),
                    Example({{2, 3}, {3}})};
    ops.push_back(std::move(def));
  }
  return ops;
}

}  // namespace tensord

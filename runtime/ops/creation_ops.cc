// Creation ops: zeros, ones, empty, full, arange, randn, rand.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/random.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

// zeros/ones/empty/full/randn/rand: shape and dtype from attributes.
absl::StatusOr<std::vector<TensorSpec>> InferFromShape(
    absl::Span<const Tensor>, const Attrs& attrs, const OpContext& ctx) {
  const DType dtype = attrs.GetDType("dtype");
  TD_ASSIGN_OR_RETURN(Shape shape, ShapeAttr(attrs, "shape", dtype));
  TD_ASSIGN_OR_RETURN(Device * device, ResolveDevice(attrs, ctx));
  return std::vector<TensorSpec>{{dtype, std::move(shape), device}};
}

absl::StatusOr<std::vector<TensorSpec>> InferRandom(
    absl::Span<const Tensor> inputs, const Attrs& attrs, const OpContext& ctx) {
  if (!IsFloating(attrs.GetDType("dtype"))) {
    return absl::InvalidArgumentError(
        absl::StrCat("random floats need a floating dtype, got ",
                     DTypeName(attrs.GetDType("dtype"))));
  }
  return InferFromShape(inputs, attrs, ctx);
}

absl::StatusOr<std::vector<TensorSpec>> InferArange(
    absl::Span<const Tensor>, const Attrs& attrs, const OpContext& ctx) {
  const double start = attrs.Float("start"), end = attrs.Float("end"),
               step = attrs.Float("step");
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) ||
      !std::isfinite(step)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "step must be nonzero and bounds finite (start=", start, ", end=", end,
        ", step=", step, ")"));
  }
  if ((end - start) / step < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "upper bound and larger bound inconsistent with step sign (start=",
        start, ", end=", end, ", step=", step, ")"));
  }
  const double count = std::ceil((end - start) / step);
  if (count > 1e15) {
    return absl::InvalidArgumentError(absl::StrCat("arange of ", count,
                                                   " elements is too large"));
  }
  TD_ASSIGN_OR_RETURN(Device * device, ResolveDevice(attrs, ctx));
  return std::vector<TensorSpec>{
      {attrs.GetDType("dtype"), Shape{static_cast<int64_t>(count)}, device}};
}

absl::Status CpuFillWith(const Tensor& out, double value) {
  return cpu::Fill(out.view(), value);
}

absl::Status CpuZeros(absl::Span<const Tensor>, absl::Span<const Tensor> out,
                      const Attrs&, const OpContext&) {
  return CpuFillWith(out[0], 0.0);
}
absl::Status CpuOnes(absl::Span<const Tensor>, absl::Span<const Tensor> out,
                     const Attrs&, const OpContext&) {
  return CpuFillWith(out[0], 1.0);
}
absl::Status CpuEmpty(absl::Span<const Tensor>, absl::Span<const Tensor>,
                      const Attrs&, const OpContext&) {
  return absl::OkStatus();  // memory is scrubbed across sessions by the allocator
}
absl::Status CpuFull(absl::Span<const Tensor>, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext&) {
  return CpuFillWith(out[0], attrs.Float("fill_value"));
}
absl::Status CpuArange(absl::Span<const Tensor>, absl::Span<const Tensor> out,
                       const Attrs& attrs, const OpContext&) {
  return cpu::Arange(out[0].view(), attrs.Float("start"), attrs.Float("step"));
}

template <cpu::Distribution kDist>
absl::Status CpuRandom(absl::Span<const Tensor>, absl::Span<const Tensor> out,
                       const Attrs&, const OpContext& ctx) {
  const uint64_t offset = ctx.generator->Reserve(out[0].numel());
  return cpu::FillRandom(kDist, ctx.generator->seed(), offset, out[0].view());
}

OpDef ShapeOp(std::string name, KernelFn cpu_fn, std::string doc) {
  OpDef def;
  def.name = std::move(name);
  def.attrs = CreationAttrs({Required("shape", AttrType::kInts)});
  def.infer = InferFromShape;
  def.cpu = cpu_fn;
  def.doc = std::move(doc);
  return def;
}

}  // namespace

std::vector<OpDef> CreationOps() {
  std::vector<OpDef> ops;
  ops.push_back(ShapeOp("zeros", CpuZeros, "A tensor filled with 0."));
  ops.push_back(ShapeOp("ones", CpuOnes, "A tensor filled with 1."));
  ops.push_back(ShapeOp("empty", CpuEmpty, "An uninitialised tensor."));
  OpDef full = ShapeOp("full", CpuFull, "A tensor filled with fill_value.");
  full.attrs = CreationAttrs({Required("shape", AttrType::kInts),
                              Required("fill_value", AttrType::kFloat)});
  ops.push_back(std::move(full));
  OpDef arange;
  arange.name = "arange";
  arange.attrs = CreationAttrs({Optional("start", AttrType::kFloat, 0.0),
                                Required("end", AttrType::kFloat),
                                Optional("step", AttrType::kFloat, 1.0)},
                               DType::kInt64);
  arange.infer = InferArange;
  arange.cpu = CpuArange;
  arange.doc = "Values from start to end (exclusive) by step.";
  ops.push_back(std::move(arange));
  OpDef randn = ShapeOp("randn", CpuRandom<cpu::Distribution::kNormal>,
                        "Standard normal samples from the session generator.");
  randn.infer = InferRandom;
  ops.push_back(std::move(randn));
  OpDef rand = ShapeOp("rand", CpuRandom<cpu::Distribution::kUniform>,
                       "Uniform [0, 1) samples from the session generator.");
  rand.infer = InferRandom;
  ops.push_back(std::move(rand));
  return ops;
}

}  // namespace tensord

// Creation ops: zeros, ones, empty, full, arange, linspace, eye, randn,
// rand, randint, and the *_like forms.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/random.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

// zeros/ones/empty/full/randn/rand: shape and dtype from attributes.
absl::StatusOr<std::vector<TensorSpec>> InferFromShape(absl::Span<const Tensor>,
                                                       const Attrs& attrs,
                                                       const OpContext& ctx) {
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

absl::StatusOr<std::vector<TensorSpec>> InferArange(absl::Span<const Tensor>,
                                                    const Attrs& attrs,
                                                    const OpContext& ctx) {
  const double start = attrs.Float("start"), end = attrs.Float("end"),
               step = attrs.Float("step");
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) ||
      !std::isfinite(step)) {
    return absl::InvalidArgumentError(
        absl::StrCat("step must be nonzero and bounds finite (start=", start,
                     ", end=", end, ", step=", step, ")"));
  }
  if ((end - start) / step < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "upper bound and larger bound inconsistent with step sign (start=",
        start, ", end=", end, ", step=", step, ")"));
  }
  const double count = std::ceil((end - start) / step);
  if (count > 1e15) {
    return absl::InvalidArgumentError(
        absl::StrCat("arange of ", count, " elements is too large"));
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
  return absl::OkStatus();  // memory is scrubbed across sessions by the
                            // allocator
}
absl::Status CpuFull(absl::Span<const Tensor>, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext&) {
  return CpuFillWith(out[0], attrs.Float("fill_value"));
}
absl::Status CpuArange(absl::Span<const Tensor>, absl::Span<const Tensor> out,
                       const Attrs& attrs, const OpContext&) {
  const DType d = out[0].dtype();
  return cpu::Arange(out[0].view(), IntegralScalar(d, attrs.Float("start")),
                     IntegralScalar(d, attrs.Float("step")));
}

template <cpu::Distribution kDist>
absl::Status CpuRandom(absl::Span<const Tensor>, absl::Span<const Tensor> out,
                       const Attrs&, const OpContext& ctx) {
  const uint64_t offset = ctx.generator->Reserve(out[0].numel());
  return cpu::FillRandom(kDist, ctx.generator->seed(), offset, out[0].view());
}

absl::StatusOr<std::vector<TensorSpec>> InferLinspace(absl::Span<const Tensor>,
                                                      const Attrs& attrs,
                                                      const OpContext& ctx) {
  const int64_t steps = attrs.Int("steps");
  if (steps < 0)
    return absl::InvalidArgumentError("number of steps must be non-negative");
  const DType dtype = attrs.GetDType("dtype");
  TD_RETURN_IF_ERROR(CheckShape({steps}, ItemSize(dtype)));
  TD_ASSIGN_OR_RETURN(Device * device, ResolveDevice(attrs, ctx));
  return std::vector<TensorSpec>{{dtype, Shape{steps}, device}};
}

absl::Status CpuLinspace(absl::Span<const Tensor>, absl::Span<const Tensor> out,
                         const Attrs& attrs, const OpContext&) {
  const DType d = out[0].dtype();
  return cpu::Linspace(out[0].view(), IntegralScalar(d, attrs.Float("start")),
                       IntegralScalar(d, attrs.Float("end")));
}

absl::StatusOr<std::vector<TensorSpec>> InferEye(absl::Span<const Tensor>,
                                                 const Attrs& attrs,
                                                 const OpContext& ctx) {
  const int64_t n = attrs.Int("n");
  const int64_t m = attrs.Has("m") ? attrs.Int("m") : n;
  if (n < 0 || m < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("n and m must be >= 0, got ", n, ", ", m));
  }
  const DType dtype = attrs.GetDType("dtype");
  TD_RETURN_IF_ERROR(CheckShape({n, m}, ItemSize(dtype)));
  TD_ASSIGN_OR_RETURN(Device * device, ResolveDevice(attrs, ctx));
  return std::vector<TensorSpec>{{dtype, Shape{n, m}, device}};
}

absl::Status CpuEye(absl::Span<const Tensor>, absl::Span<const Tensor> out,
                    const Attrs&, const OpContext&) {
  TD_RETURN_IF_ERROR(cpu::Fill(out[0].view(), 0));
  const Tensor& t = out[0];
  const int64_t k = std::min(t.shape()[0], t.shape()[1]);
  const Tensor diag =
      t.AsStrided({k}, {t.strides()[0] + t.strides()[1]}, t.offset());
  return cpu::Fill(diag.view(), 1);
}

// randint(low, high, size): floor(low + u * (high - low)) from uniform u.
absl::StatusOr<std::vector<Tensor>> Randint(absl::Span<const Tensor>,
                                            const Attrs& attrs,
                                            const OpContext& ctx) {
  const int64_t low = attrs.Int("low"), high = attrs.Int("high");
  if (high <= low) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_ expects 'from' to be less than 'to', but got from=", low,
        " >= to=", high));
  }
  // Values go through float64: beyond 2^53 they would be neither exact nor
  // (at the int64 limits) convertible back; high - low could overflow.
  constexpr int64_t kExact = int64_t{1} << 53;
  if (low < -kExact || high > kExact) {
    return absl::InvalidArgumentError(absl::StrCat(
        "randint supports low and high within +-2^53 (values are drawn in "
        "float64), got low=",
        low, " high=", high));
  }
  const DType dtype = attrs.GetDType("dtype");
  TD_ASSIGN_OR_RETURN(Tensor u, Call1("rand", {},
                                      {{"shape", attrs.Ints("size")},
                                       {"dtype", DType::kFloat64},
                                       {"device", attrs.String("device")}},
                                      ctx));
  TD_ASSIGN_OR_RETURN(Tensor span, Scalar(static_cast<double>(high - low),
                                          DType::kFloat64, u.device(), ctx));
  TD_ASSIGN_OR_RETURN(Tensor lo, Scalar(static_cast<double>(low),
                                        DType::kFloat64, u.device(), ctx));
  TD_ASSIGN_OR_RETURN(Tensor v, Call1("mul", {u, span}, {}, ctx));
  TD_ASSIGN_OR_RETURN(v, Call1("add", {v, lo}, {}, ctx));
  TD_ASSIGN_OR_RETURN(v, Call1("floor", {v}, {}, ctx));
  TD_ASSIGN_OR_RETURN(v, Call1("to", {v}, {{"dtype", dtype}}, ctx));
  return std::vector<Tensor>{v};
}

// zeros_like & co: the shape and (unless given) dtype and device of input.
template <int kWhich>
absl::StatusOr<std::vector<Tensor>> Like(absl::Span<const Tensor> in,
                                         const Attrs& attrs,
                                         const OpContext& ctx) {
  static constexpr const char* kNames[] = {"zeros", "ones", "empty",
                                           "full",  "rand", "randn"};
  const Tensor& t = in[0];
  std::map<std::string, AttrValue> a{
      {"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
      {"dtype", attrs.Has("dtype") ? attrs.GetDType("dtype") : t.dtype()},
      {"device", attrs.String("device").empty() ? t.device()->name()
                                                : attrs.String("device")}};
  if (kWhich == 3) a["fill_value"] = attrs.Float("fill_value");
  TD_ASSIGN_OR_RETURN(Tensor out, Call1(kNames[kWhich], {}, std::move(a), ctx));
  return std::vector<Tensor>{out};
}

OpDef ShapeOp(std::string name, KernelFn cpu_fn, std::string doc) {
  OpDef def;
  def.name = std::move(name);
  def.attrs = CreationAttrs({Required("shape", AttrType::kInts)});
  def.infer = InferFromShape;
  def.cpu = cpu_fn;
  def.doc = std::move(doc);
  def.examples = {Example({}, {{"shape", std::vector<int64_t>{2, 3}}}),
                  Example({}, {{"shape", std::vector<int64_t>{0}}})};
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
  full.examples = {Example(
      {}, {{"shape", std::vector<int64_t>{2, 3}}, {"fill_value", 1.5}})};
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
  arange.examples = {
      Example({}, {{"end", 5.0}}),
      Example({}, {{"start", 1.0}, {"end", 0.0}, {"step", -0.25}})};
  ops.push_back(std::move(arange));
  OpDef randn = ShapeOp("randn", CpuRandom<cpu::Distribution::kNormal>,
                        "Standard normal samples from the session generator.");
  randn.infer = InferRandom;
  ops.push_back(std::move(randn));
  OpDef rand = ShapeOp("rand", CpuRandom<cpu::Distribution::kUniform>,
                       "Uniform [0, 1) samples from the session generator.");
  rand.infer = InferRandom;
  ops.push_back(std::move(rand));
  OpDef linspace =
      MakeOp("linspace", 0, 0,
             CreationAttrs({Required("start", AttrType::kFloat),
                            Required("end", AttrType::kFloat),
                            Required("steps", AttrType::kInt)}),
             "steps values evenly spaced from start to end inclusive.");
  linspace.infer = InferLinspace;
  linspace.cpu = CpuLinspace;
  linspace.differentiable = false;
  linspace.examples = {
      Example({}, {{"start", 0.0}, {"end", 1.0}, {"steps", int64_t{5}}})};
  ops.push_back(std::move(linspace));
  OpDef eye =
      MakeOp("eye", 0, 0,
             CreationAttrs({Required("n", AttrType::kInt),
                            Optional("m", AttrType::kInt, std::monostate{})}),
             "An n x m matrix with ones on the diagonal.");
  eye.infer = InferEye;
  eye.cpu = CpuEye;
  eye.differentiable = false;
  eye.examples = {Example({}, {{"n", int64_t{3}}, {"m", int64_t{2}}})};
  ops.push_back(std::move(eye));
  OpDef randint =
      MakeOp("randint", 0, 0,
             CreationAttrs({Optional("low", AttrType::kInt, int64_t{0}),
                            Required("high", AttrType::kInt),
                            Required("size", AttrType::kInts)},
                           DType::kInt64),
             "Integers uniform in [low, high) from the session generator.");
  randint.composite = Randint;
  randint.differentiable = false;
  randint.examples = {Example(
      {}, {{"high", int64_t{5}}, {"size", std::vector<int64_t>{3, 2}}})};
  ops.push_back(std::move(randint));
  const char* like_names[] = {"zeros_like", "ones_like", "empty_like",
                              "full_like",  "rand_like", "randn_like"};
  ViewFn like_fns[] = {Like<0>, Like<1>, Like<2>, Like<3>, Like<4>, Like<5>};
  for (int i = 0; i < 6; ++i) {
    std::vector<AttrSpec> attrs = {
        Optional("dtype", AttrType::kDType, std::monostate{}),
        Optional("device", AttrType::kString, std::string())};
    if (i == 3)
      attrs.insert(attrs.begin(), Required("fill_value", AttrType::kFloat));
    OpDef like = MakeOp(like_names[i], 1, 1, std::move(attrs),
                        absl::StrCat("Like ", like_names[i],
                                     " with input's shape, and its "
                                     "dtype and device unless given."));
    like.composite = like_fns[i];
    like.differentiable = false;
    if (i == 3) like.examples = {Example({{2, 3}}, {{"fill_value", 2.5}})};
    ops.push_back(std::move(like));
  }
  return ops;
}

}  // namespace tensord

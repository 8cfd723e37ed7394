// Ops along one dim: sort, argsort, topk, cumsum, cumprod, flip, and
// multinomial sampling from the session generator. Kernels in
// kernels/cpu/sort.h; flip is a copy of a reversed view, so it runs on every
// device. Gradients: derivatives_shape.cc (sort, flip, cumsum); topk and
// argsort are composites differentiated through sort.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/random.h"
#include "kernels/cpu/sort.h"
#include "runtime/core/status_macros.h"
#include "runtime/device.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/cuda_kernels.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using Outs = absl::StatusOr<std::vector<Tensor>>;

Specs InferSort(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext&) {
  TD_RETURN_IF_ERROR(OneDim(in[0], attrs).status());
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[0].shape(), in[0].device()},
      {DType::kInt64, in[0].shape(), in[0].device()}};
}

absl::Status CpuSort(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, OneDim(in[0], attrs));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  return cpu::Sort(x.view(), in[0].ndim() == 0 ? 0 : d,
                   attrs.Bool("descending"), out[0].view(), out[1].view());
}

// topk on the CPU: the indices from a partial selection (cpu::TopKIndices,
// O(n + k log k) a row rather than a whole sort), the values gathered at
// them, so that the gradient is gather's (the same scatter as sort's).
Outs CpuTopK(const Tensor& input, int d, int64_t k, bool largest,
             const OpContext& ctx) {
  std::vector<int64_t> shape(input.shape().begin(), input.shape().end());
  shape[d] = k;
  TD_ASSIGN_OR_RETURN(Tensor idx, Call1("empty", {},
                                        {{"shape", shape},
                                         {"dtype", DType::kInt64},
                                         {"device", input.device()->name()}},
                                        ctx));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(input, ctx));
  TD_RETURN_IF_ERROR(cpu::TopKIndices(x.view(), d, k, largest, idx.view()));
  TD_ASSIGN_OR_RETURN(
      Tensor values, Call1("gather", {input, idx}, {{"dim", int64_t{d}}}, ctx));
  return std::vector<Tensor>{values, idx};
}

// topk as the first k of a stable sort: PyTorch's values, and its indices
// wherever the k-th value is not tied. Bool input is refused as PyTorch
// refuses it ("topk_cpu" not implemented for 'Bool'), though sort takes it.
Outs TopK(absl::Span<const Tensor> in, const Attrs& attrs,
          const OpContext& ctx) {
  if (in[0].dtype() == DType::kBool) {
    return absl::InvalidArgumentError(
        "topk(): bool tensors are not supported, as in PyTorch (use "
        ".to(torch.uint8) first)");
  }
  TD_ASSIGN_OR_RETURN(int d, OneDim(in[0], attrs));
  const int64_t k = attrs.Int("k");
  const int64_t size = in[0].ndim() == 0 ? 1 : in[0].shape()[d];
  if (k < 0 || k > size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "topk(): k (", k, ") is out of range for dimension ", d, " of size ",
        size, " (shape ", ShapeToString(in[0].shape()), ")"));
  }
  // The partial selection's kernel takes the CPU kernels' own dtypes; half
  // types go through sort, which widens them.
  const bool half = in[0].dtype() == DType::kFloat16 ||
                    in[0].dtype() == DType::kBFloat16;
  if (in[0].device()->kind() == DeviceKind::kCpu && in[0].ndim() > 0 &&
      !half) {
    return CpuTopK(in[0], d, k, attrs.Bool("largest"), ctx);
  }
  TD_ASSIGN_OR_RETURN(auto sorted,
                      CallOp("sort", {in[0]},
                             {{"dim", int64_t{d}},
                              {"descending", attrs.Bool("largest")},
                              {"stable", true}},
                             ctx));
  if (in[0].ndim() == 0) return sorted;
  std::vector<Tensor> outs;
  for (const Tensor& t : sorted) {
    TD_ASSIGN_OR_RETURN(
        Tensor first,
        Call1("narrow", {t},
              {{"dim", int64_t{d}}, {"start", int64_t{0}}, {"length", k}},
              ctx));
    outs.push_back(std::move(first));
  }
  return outs;
}

Outs Argsort(absl::Span<const Tensor> in, const Attrs& attrs,
             const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(auto sorted,
                      CallOp("sort", {in[0]},
                             {{"dim", attrs.Int("dim")},
                              {"descending", attrs.Bool("descending")},
                              {"stable", attrs.Bool("stable")}},
                             ctx));
  return std::vector<Tensor>{sorted[1]};
}

// cumsum/cumprod: integer and bool inputs accumulate in int64 unless
// `dtype` says otherwise (PyTorch's rule).
Specs InferScan(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext&) {
  TD_RETURN_IF_ERROR(OneDim(in[0], attrs).status());
  DType d = in[0].dtype();
  if (attrs.Has("dtype")) {
    d = attrs.GetDType("dtype");
  } else if (!IsFloating(d)) {
    d = DType::kInt64;
  }
  return std::vector<TensorSpec>{{d, in[0].shape(), in[0].device()}};
}

template <bool kProduct>
absl::Status CpuScan(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, OneDim(in[0], attrs));
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  TD_ASSIGN_OR_RETURN(x, Contiguous(x, ctx));
  return cpu::CumScan(x.view(), in[0].ndim() == 0 ? 0 : d, kProduct,
                      out[0].view());
}

absl::StatusOr<std::vector<bool>> FlipDims(const Tensor& t,
                                           const Attrs& attrs) {
  std::vector<bool> flip(t.ndim(), false);
  for (int64_t dim : attrs.Ints("dims")) {
    TD_ASSIGN_OR_RETURN(int d, WrapDim(dim, std::max(t.ndim(), 1)));
    if (t.ndim() == 0) continue;
    if (flip[d]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "flip(): dim ", d, " appears multiple times in the list of dims"));
    }
    flip[d] = true;
  }
  return flip;
}

Specs InferFlip(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext&) {
  TD_RETURN_IF_ERROR(FlipDims(in[0], attrs).status());
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[0].shape(), in[0].device()}};
}

// flip: the input seen backwards along each flipped dim (a negative stride
// from its last element), copied by the device's copy kernel.
absl::Status DeviceFlip(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs& attrs,
                        const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<bool> flip, FlipDims(in[0], attrs));
  StridedView v = in[0].view();
  if (v.numel() == 0) return absl::OkStatus();
  char* data = static_cast<char*>(v.data);
  for (int d = 0; d < v.ndim; ++d) {
    if (!flip[d]) continue;
    data += (v.sizes[d] - 1) * v.strides[d] *
            static_cast<int64_t>(ItemSize(v.dtype));
    v.strides[d] = -v.strides[d];
  }
  v.data = data;
  return CopyOnDevice(out[0].device(), v, out[0].view(), ctx.alloc.stream);
}

// multinomial(input, num_samples, replacement): input is [n] or [rows, n]
// weights; the draws use the session generator (PyTorch's stream is not
// reproduced: the same seed gives the same samples in tensord only).
Specs InferMultinomial(absl::Span<const Tensor> in, const Attrs& attrs,
                       const OpContext&) {
  const Tensor& p = in[0];
  if (p.ndim() != 1 && p.ndim() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("multinomial(): prob_dist must be 1 or 2 dim, got shape ",
                     ShapeToString(p.shape())));
  }
  TD_RETURN_IF_ERROR(RequireFloating(p, "multinomial(): prob_dist"));
  const int64_t n = p.shape().back(), k = attrs.Int("num_samples");
  if (k <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "multinomial(): cannot sample num_samples=", k, " <= 0 samples"));
  }
  if (n == 0) {
    return absl::InvalidArgumentError(
        "multinomial(): the distribution has no categories");
  }
  if (!attrs.Bool("replacement") && k > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("multinomial(): cannot sample num_samples=", k,
                     " > n_categories=", n, " without replacement"));
  }
  Shape shape = p.shape();
  shape.back() = k;
  return std::vector<TensorSpec>{{DType::kInt64, shape, p.device()}};
}

absl::Status CpuMultinomial(absl::Span<const Tensor> in,
                            absl::Span<const Tensor> out, const Attrs& attrs,
                            const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor p, Contiguous(in[0], ctx));
  const Shape& shape = out[0].shape();
  TD_ASSIGN_OR_RETURN(Tensor u, Tensor::Empty(out[0].device(), DType::kFloat64,
                                              shape, ctx.alloc));
  const uint64_t offset = ctx.generator->Reserve(u.numel());
  TD_RETURN_IF_ERROR(cpu::FillRandom(cpu::Distribution::kUniform,
                                     ctx.generator->seed(), offset, u.view()));
  return cpu::Multinomial(p.view(), u.view(), attrs.Bool("replacement"),
                          out[0].view());
}

// roll: each (shift, dim) pair moves the elements shift places along dim,
// wrapping around: the last `shift` elements (a narrow view) concatenated
// before the rest. No dims: the flattened input rolled, then reshaped.
Outs Roll(absl::Span<const Tensor> in, const Attrs& attrs,
          const OpContext& ctx) {
  const std::vector<int64_t>& shifts = attrs.Ints("shifts");
  std::vector<int64_t> dims = attrs.Ints("dims");
  Tensor x = in[0];
  const bool flat = dims.empty();
  bool moved = false;
  if (flat ? shifts.size() != 1 : shifts.size() != dims.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "roll(): shifts (", shifts.size(), " values) and dims (", dims.size(),
        ") must align: one shift per dim, or one shift and no dims"));
  }
  if (flat) {
    TD_ASSIGN_OR_RETURN(
        x, Call1("reshape", {x}, {{"shape", std::vector<int64_t>{-1}}}, ctx));
    dims = {0};
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    TD_ASSIGN_OR_RETURN(int d, WrapDim(dims[i], x.ndim()));
    const int64_t n = x.shape()[d];
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    TD_ASSIGN_OR_RETURN(
        Tensor tail,
        Call1("narrow", {x},
              {{"dim", int64_t{d}}, {"start", n - s}, {"length", s}}, ctx));
    TD_ASSIGN_OR_RETURN(
        Tensor head,
        Call1("narrow", {x},
              {{"dim", int64_t{d}}, {"start", int64_t{0}}, {"length", n - s}},
              ctx));
    TD_ASSIGN_OR_RETURN(x,
                        Call1("cat", {tail, head}, {{"dim", int64_t{d}}}, ctx));
    moved = true;
  }
  if (flat) {
    const Shape& s = in[0].shape();
    TD_ASSIGN_OR_RETURN(
        x, Call1("reshape", {x},
                 {{"shape", std::vector<int64_t>(s.begin(), s.end())}}, ctx));
  }
  if (!moved) {  // still a new tensor, as PyTorch's
    TD_ASSIGN_OR_RETURN(x, Call1("clone", {x}, {}, ctx));
  }
  return std::vector<Tensor>{x};
}

// randperm(n): the argsort of n float64 uniform draws of the session
// generator (a permutation whatever the ties; PyTorch's stream is not
// reproduced), as `dtype`.
Outs Randperm(absl::Span<const Tensor>, const Attrs& attrs,
              const OpContext& ctx) {
  const int64_t n = attrs.Int("n");
  if (n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("randperm(): n must be non-negative, got ", n));
  }
  const DType dtype = attrs.GetDType("dtype");
  if (dtype == DType::kBool || (!IsFloating(dtype) && dtype != DType::kInt64 &&
                                n > (int64_t{1} << 31))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "randperm(): ", n, " values do not fit dtype ", DTypeName(dtype)));
  }
  TD_ASSIGN_OR_RETURN(Tensor u, Call1("rand", {},
                                      {{"shape", std::vector<int64_t>{n}},
                                       {"dtype", DType::kFloat64},
                                       {"device", attrs.String("device")}},
                                      ctx));
  TD_ASSIGN_OR_RETURN(Tensor idx, Call1("argsort", {u}, {}, ctx));
  if (dtype != DType::kInt64) {
    TD_ASSIGN_OR_RETURN(idx, Call1("to", {idx}, {{"dtype", dtype}}, ctx));
  }
  return std::vector<Tensor>{idx};
}

AttrSpec DimAttr(int64_t dim) { return Optional("dim", AttrType::kInt, dim); }

}  // namespace

std::vector<OpDef> SortOps() {
  std::vector<OpDef> ops;
  OpDef sort =
      MakeOp("sort", 1, 1,
             {DimAttr(-1), Optional("descending", AttrType::kBool, false),
              Optional("stable", AttrType::kBool, false)},
             "(values, indices) of input sorted along dim; always "
             "stable; NaN sorts last (first when descending).");
  sort.num_outputs = 2;
  sort.infer = InferSort;
  sort.cpu = CpuSort;
  sort.examples = {
      Example({{3, 4}}),
      Example({{3, 4}}, {{"dim", int64_t{0}}, {"descending", true}})};
  ops.push_back(std::move(sort));
  OpDef argsort =
      MakeOp("argsort", 1, 1,
             {DimAttr(-1), Optional("descending", AttrType::kBool, false),
              Optional("stable", AttrType::kBool, false)},
             "The indices that sort input along dim (sort's).");
  argsort.composite = Argsort;
  argsort.differentiable = false;
  argsort.examples = {Example({{3, 4}})};
  ops.push_back(std::move(argsort));
  OpDef topk = MakeOp("topk", 1, 1,
                      {Required("k", AttrType::kInt), DimAttr(-1),
                       Optional("largest", AttrType::kBool, true),
                       Optional("sorted", AttrType::kBool, true)},
                      "(values, indices) of the k largest (smallest) entries "
                      "along dim, in order; ties keep their order.");
  topk.num_outputs = 2;
  topk.composite = TopK;
  topk.examples = {
      Example({{3, 5}}, {{"k", int64_t{2}}}),
      Example({{3, 5}},
              {{"k", int64_t{3}}, {"dim", int64_t{0}}, {"largest", false}})};
  ops.push_back(std::move(topk));
  for (bool product : {false, true}) {
    OpDef scan = MakeOp(
        product ? "cumprod" : "cumsum", 1, 1,
        {Required("dim", AttrType::kInt),
         Optional("dtype", AttrType::kDType, std::monostate{})},
        product ? "Running product along dim." : "Running sum along dim.");
    scan.infer = InferScan;
    scan.cpu = product ? CpuScan<true> : CpuScan<false>;
    scan.examples = {Example({{3, 4}}, {{"dim", int64_t{1}}}),
                     Example({{2, 3, 4}}, {{"dim", int64_t{0}}})};
    ops.push_back(std::move(scan));
  }
  OpDef flip = MakeOp("flip", 1, 1, {Required("dims", AttrType::kInts)},
                      "input with the order of the elements of each of dims "
                      "reversed (a copy).");
  flip.infer = InferFlip;
  flip.cpu = DeviceFlip;
  flip.cuda = CudaKernelsBuilt() ? DeviceFlip : nullptr;
  flip.native_half = true;
  flip.examples = {
      Example({{2, 3, 4}}, {{"dims", std::vector<int64_t>{0, 2}}})};
  ops.push_back(std::move(flip));
  OpDef multinomial =
      MakeOp("multinomial", 1, 1,
             {Required("num_samples", AttrType::kInt),
              Optional("replacement", AttrType::kBool, false)},
             "num_samples category indices per row drawn with the row's "
             "weights, from the session generator.");
  multinomial.infer = InferMultinomial;
  multinomial.cpu = CpuMultinomial;
  multinomial.differentiable = false;
  multinomial.examples = {Example({{2, 5}}, {{"num_samples", int64_t{3}}})};
  multinomial.examples[0].positive = true;
  ops.push_back(std::move(multinomial));
  OpDef roll =
      MakeOp("roll", 1, 1,
             {Required("shifts", AttrType::kInts),
              Optional("dims", AttrType::kInts, std::vector<int64_t>{})},
             "input with its elements moved shifts places along dims "
             "(wrapping around); no dims: along the flattened input.");
  roll.composite = Roll;
  roll.examples = {Example({{3, 4}}, {{"shifts", std::vector<int64_t>{1, -5}},
                                      {"dims", std::vector<int64_t>{0, 1}}}),
                   Example({{3, 4}}, {{"shifts", std::vector<int64_t>{2}}})};
  ops.push_back(std::move(roll));
  OpDef randperm =
      MakeOp("randperm", 0, 0,
             CreationAttrs({Required("n", AttrType::kInt)}, DType::kInt64),
             "A random permutation of 0..n-1 from the session generator.");
  randperm.composite = Randperm;
  randperm.differentiable = false;
  randperm.examples = {Example({}, {{"n", int64_t{7}}})};
  ops.push_back(std::move(randperm));
  return ops;
}

}  // namespace tensord

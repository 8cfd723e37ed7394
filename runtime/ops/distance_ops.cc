// Distances and counts over whole rows: torch.cdist (the row `cdist`, ATen's
// _cdist_forward, and its gradient row `_cdist_backward`),
// torch.nn.functional.pdist (`pdist`, `_pdist_backward`) and torch.histc.
// The kernels are kernels/cpu/distance.h and histogram.h and their CUDA
// twins (the switch: cuda_distance.cc); the norms are Note [Distance norms]
// (runtime/core/distance_math.h), histc's bins Note [Histc bins]
// (runtime/core/histogram_math.h). Gradients as PyTorch's derivatives.yaml:
// cdist's x2 takes _cdist_backward with the operands swapped and the
// gradient transposed; the backward rows themselves are not differentiable
// (PyTorch's are not either).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/cuda_kernels.h"
#include "runtime/ops/derivatives.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using Ins = absl::Span<const Tensor>;

absl::Status CheckP(double p, const char* what) {
  if (p >= 0) return absl::OkStatus();  // NaN fails too, as in PyTorch
  return absl::InvalidArgumentError(
      absl::StrCat(what, " only supports non-negative p values, got ", p));
}

absl::Status CheckFloating(const Tensor& t, const char* what, const char* arg) {
  if (IsFloating(t.dtype())) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " only supports floating-point dtypes, ", arg,
                   " got: ", DTypeName(t.dtype())));
}

Shape Batch(const Tensor& t) {
  return Shape(t.shape().begin(), t.shape().end() - 2);
}

Shape With(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

// `t` broadcast to `shape` as a C-contiguous tensor (no copy when it
// already is one of that shape).
absl::StatusOr<Tensor> ContiguousAs(const Tensor& t, const Shape& shape,
                                    const OpContext& ctx) {
  if (t.shape() == shape) return Contiguous(t, ctx);
  TD_ASSIGN_OR_RETURN(Tensor out,
                      Tensor::Empty(t.device(), t.dtype(), shape, ctx.alloc));
  TD_RETURN_IF_ERROR(CopyOnDevice(t.device(), t.BroadcastView(shape),
                                  out.view(), ctx.alloc.stream));
  return out;
}

// cdist(x1 [*, P, M], x2 [*, R, M]; p) -> [broadcast(*), P, R].
absl::StatusOr<Shape> CdistBatch(const Tensor& x1, const Tensor& x2) {
  for (const auto& [t, arg] : {std::pair{&x1, "X1"}, std::pair{&x2, "X2"}}) {
    TD_RETURN_IF_ERROR(CheckFloating(*t, "cdist", arg));
    if (t->ndim() < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("cdist only supports at least 2D tensors, ", arg,
                       " got: ", t->ndim(), "D"));
    }
  }
  if (x1.shape().back() != x2.shape().back()) {
    return absl::InvalidArgumentError(
        absl::StrCat("X1 and X2 must have the same number of columns. X1: ",
                     x1.shape().back(), " X2: ", x2.shape().back()));
  }
  if (x1.dtype() != x2.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cdist: X1 (", DTypeName(x1.dtype()), ") and X2 (",
                     DTypeName(x2.dtype()), ") must have the same dtype"));
  }
  return BroadcastShapes(Batch(x1), Batch(x2));
}

Specs InferCdist(Ins in, const Attrs& attrs, const OpContext&) {
  TD_RETURN_IF_ERROR(CheckP(attrs.Float("p"), "cdist"));
  TD_ASSIGN_OR_RETURN(Shape batch, CdistBatch(in[0], in[1]));
  const int64_t p_rows = in[0].shape().end()[-2];
  const int64_t r_rows = in[1].shape().end()[-2];
  return std::vector<TensorSpec>{
      {in[0].dtype(), With(batch, p_rows, r_rows), in[0].device()}};
}

absl::Status Cdist(Ins in, Ins out, const Attrs& attrs, const OpContext& ctx) {
  if (out[0].numel() == 0) return absl::OkStatus();
  const Shape batch = Batch(out[0]);
  const int64_t m = in[0].shape().back();
  TD_ASSIGN_OR_RETURN(
      Tensor x1,
      ContiguousAs(in[0], With(batch, in[0].shape().end()[-2], m), ctx));
  TD_ASSIGN_OR_RETURN(
      Tensor x2,
      ContiguousAs(in[1], With(batch, in[1].shape().end()[-2], m), ctx));
  return DeviceCdist(out[0], ctx, x1.view(), x2.view(), attrs.Float("p"));
}

// _cdist_backward(grad, x1, x2, cdist; p): x1's gradient in x1's shape with
// the batch dims broadcast (the engine sums them back), or zeros of x1's own
// shape when anything is empty (PyTorch's meta function says the same).
bool CdistBackwardEmpty(Ins in, const Shape& batch) {
  return in[1].shape().end()[-2] == 0 || in[2].shape().end()[-2] == 0 ||
         in[1].shape().back() == 0 || NumElements(batch) == 0;
}

Specs InferCdistBackward(Ins in, const Attrs& attrs, const OpContext&) {
  TD_RETURN_IF_ERROR(CheckP(attrs.Float("p"), "_cdist_backward"));
  TD_ASSIGN_OR_RETURN(Shape batch, CdistBatch(in[1], in[2]));
  const Shape want =
      With(batch, in[1].shape().end()[-2], in[2].shape().end()[-2]);
  for (int i : {0, 3}) {
    if (in[i].shape() != want || in[i].dtype() != in[1].dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "_cdist_backward: ", i == 0 ? "grad" : "cdist", " must be ",
          DTypeName(in[1].dtype()), " ", ShapeToString(want), ", got ",
          DTypeName(in[i].dtype()), " ", ShapeToString(in[i].shape())));
    }
  }
  const Shape shape =
      CdistBackwardEmpty(in, batch)
          ? in[1].shape()
          : With(batch, in[1].shape().end()[-2], in[1].shape().back());
  return std::vector<TensorSpec>{{in[1].dtype(), shape, in[1].device()}};
}

absl::Status CdistBackward(Ins in, Ins out, const Attrs& attrs,
                           const OpContext& ctx) {
  const Shape batch = Batch(in[0]);
  if (CdistBackwardEmpty(in, batch)) {
    return FillOnDevice(out[0].device(), out[0].view(), 0, ctx.alloc.stream);
  }
  const int64_t m = in[1].shape().back();
  TD_ASSIGN_OR_RETURN(Tensor grad, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor dist, Contiguous(in[3], ctx));
  TD_ASSIGN_OR_RETURN(
      Tensor x1,
      ContiguousAs(in[1], With(batch, in[1].shape().end()[-2], m), ctx));
  TD_ASSIGN_OR_RETURN(
      Tensor x2,
      ContiguousAs(in[2], With(batch, in[2].shape().end()[-2], m), ctx));
  return DeviceCdistBackward(out[0], ctx, grad.view(), x1.view(), x2.view(),
                             dist.view(), attrs.Float("p"));
}

// pdist(x [N, M]; p) -> [N (N - 1) / 2].
absl::Status CheckPdist(const Tensor& x, double p, const char* what) {
  TD_RETURN_IF_ERROR(CheckP(p, what));
  if (x.ndim() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " only supports 2D tensors, got: ", x.ndim(), "D"));
  }
  return CheckFloating(x, what, "input");
}

Specs InferPdist(Ins in, const Attrs& attrs, const OpContext&) {
  TD_RETURN_IF_ERROR(CheckPdist(in[0], attrs.Float("p"), "pdist"));
  const int64_t n = in[0].shape()[0];
  return std::vector<TensorSpec>{
      {in[0].dtype(), Shape{n * (n - 1) / 2}, in[0].device()}};
}

absl::Status Pdist(Ins in, Ins out, const Attrs& attrs, const OpContext& ctx) {
  if (out[0].numel() == 0) return absl::OkStatus();
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  return DevicePdist(out[0], ctx, x.view(), attrs.Float("p"));
}

// _pdist_backward(grad, x, pdist; p) -> x's shape.
Specs InferPdistBackward(Ins in, const Attrs& attrs, const OpContext&) {
  TD_RETURN_IF_ERROR(CheckPdist(in[1], attrs.Float("p"), "_pdist_backward"));
  const int64_t n = in[1].shape()[0];
  const Shape want{n * (n - 1) / 2};
  for (int i : {0, 2}) {
    if (in[i].shape() != want || in[i].dtype() != in[1].dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "_pdist_backward: ", i == 0 ? "grad" : "pdist", " must be ",
          DTypeName(in[1].dtype()), " ", ShapeToString(want), ", got ",
          DTypeName(in[i].dtype()), " ", ShapeToString(in[i].shape())));
    }
  }
  return std::vector<TensorSpec>{
      {in[1].dtype(), in[1].shape(), in[1].device()}};
}

absl::Status PdistBackward(Ins in, Ins out, const Attrs& attrs,
                           const OpContext& ctx) {
  if (out[0].numel() == 0) return absl::OkStatus();
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return DevicePdistBackward(out[0], ctx, c[0].view(), c[1].view(), c[2].view(),
                             attrs.Float("p"));
}

// histc(input; bins, min, max) -> [bins] in input's dtype.
Specs InferHistc(Ins in, const Attrs& attrs, const OpContext&) {
  if (!IsFloating(in[0].dtype())) {
    return absl::InvalidArgumentError(
        absl::StrCat("histc(): expected a floating-point input, got ",
                     DTypeName(in[0].dtype())));
  }
  const int64_t bins = attrs.Int("bins");
  if (bins <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("histc(): bins must be > 0, but got ", bins));
  }
  if (attrs.Float("max") < attrs.Float("min")) {
    return absl::InvalidArgumentError("histc(): max must be larger than min");
  }
  return std::vector<TensorSpec>{{in[0].dtype(), Shape{bins}, in[0].device()}};
}

// A 0-d tensor's value on the host (a value read: the op waits for it).
absl::StatusOr<double> ReadValue(const Tensor& t, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor host,
                      ToDevice(t, ctx.devices->cpu(), DType::kFloat64, ctx));
  return *static_cast<const double*>(host.data());
}

double LargestFinite(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 65504.0;
    case DType::kBFloat16:
      return 3.3895313892515355e38;
    case DType::kFloat32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

// The range as PyTorch's histc chooses it: min == max takes the data's
// extremes (a read of them), a range still empty widens by 1 each way, and
// it must end up finite.
absl::Status Histc(Ins in, Ins out, const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  double lo = attrs.Float("min"), hi = attrs.Float("max");
  if (lo == hi && x.numel() > 0) {
    OpContext plain = ctx;  // the extremes are read, never differentiated
    plain.recorder = nullptr;
    TD_ASSIGN_OR_RETURN(Tensor lo_t, Call1("amin", {x}, {}, plain));
    TD_ASSIGN_OR_RETURN(Tensor hi_t, Call1("amax", {x}, {}, plain));
    TD_ASSIGN_OR_RETURN(lo, ReadValue(lo_t, plain));
    TD_ASSIGN_OR_RETURN(hi, ReadValue(hi_t, plain));
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  // PyTorch converts the bounds to the input's dtype: past its largest
  // finite value they are infinite there (and the conversion, in C++,
  // undefined), so such bounds are refused as infinite ones are.
  const double largest = LargestFinite(x.dtype());
  if (!(std::fabs(lo) <= largest) || !(std::fabs(hi) <= largest)) {
    return absl::InvalidArgumentError(
        absl::StrCat("torch.histc: range of [", lo, ", ", hi,
                     "] is not finite in ", DTypeName(x.dtype())));
  }
  if (!(lo < hi)) {
    return absl::InvalidArgumentError(
        "torch.histc: max must be larger than min");
  }
  return DeviceHistc(out[0], ctx, x.view(), lo, hi);
}

Grads CdistGrad(GradCtx& g) {
  const std::map<std::string, AttrValue> p = {{"p", g.attrs().Float("p")}};
  auto mt = [&](const GradValue& v) {
    return g.Op("transpose", {v},
                {{"dim0", int64_t{-1}}, {"dim1", int64_t{-2}}});
  };
  return {g.needs(0) ? g.Op("_cdist_backward",
                            {g.grad(), g.in(0), g.in(1), g.out()}, p)
                     : GradValue(),
          g.needs(1) ? g.Op("_cdist_backward",
                            {mt(g.grad()), g.in(1), g.in(0), mt(g.out())}, p)
                     : GradValue()};
}

Grads PdistGrad(GradCtx& g) {
  return {g.Op("_pdist_backward", {g.grad(), g.in(0), g.out()},
               {{"p", g.attrs().Float("p")}})};
}

}  // namespace

std::vector<GradRow> DistanceGrads() {
  return {{"cdist", {0, 1}, {0}, CdistGrad}, {"pdist", {0}, {0}, PdistGrad}};
}

std::vector<OpDef> DistanceOps() {
  const AttrSpec p = Optional("p", AttrType::kFloat, 2.0);
  std::vector<OpDef> ops;
  auto row = [&](const char* name, int arity, std::vector<AttrSpec> attrs,
                 InferFn infer, KernelFn kernel, bool differentiable,
                 OpExample example, const char* doc) {
    OpDef def = MakeOp(name, arity, arity, std::move(attrs), doc);
    def.infer = infer;
    def.cpu = kernel;
    def.cuda = CudaKernelsBuilt() ? kernel : nullptr;
    def.differentiable = differentiable;
    def.examples = {std::move(example)};
    ops.push_back(std::move(def));
  };
  row("cdist", 2, {p}, InferCdist, Cdist, true,
      Example({{2, 3, 4}, {5, 4}}, {{"p", 1.5}}),
      "torch.cdist (ATen's _cdist_forward): [*, P, R] p-norm distances of "
      "x1 [*, P, M]'s rows to x2 [*, R, M]'s, batch dims broadcast; p >= 0, "
      "inf the max norm. Computed directly for every p (no matmul form).");
  row("_cdist_backward", 4, {p}, InferCdistBackward, CdistBackward, false,
      Example({{3, 5}, {3, 4}, {5, 4}, {3, 5}}, {{"p", 2.0}}),
      "(grad, x1, x2, cdist): x1's gradient of cdist, x1's shape with the "
      "batch dims broadcast (zeros of x1's shape when anything is empty).");
  row("pdist", 1, {p}, InferPdist, Pdist, true, Example({{5, 3}}, {{"p", 3.0}}),
      "torch.nn.functional.pdist (ATen's _pdist_forward): the distances of "
      "a 2-d input's rows i < j, in row-major order of the pairs.");
  row("_pdist_backward", 3, {p}, InferPdistBackward, PdistBackward, false,
      Example({{10}, {5, 3}, {10}}, {{"p", 2.0}}),
      "(grad, input, pdist): the input's gradient of pdist.");
  row("histc", 1,
      {Optional("bins", AttrType::kInt, int64_t{100}),
       Optional("min", AttrType::kFloat, 0.0),
       Optional("max", AttrType::kFloat, 0.0)},
      InferHistc, Histc, false, Example({{4, 5}}, {{"bins", int64_t{7}}}),
      "torch.histc: counts of the elements in `bins` equal-width bins over "
      "[min, max] (min == max: the data's range), in the input's dtype; the "
      "last bin includes max, elements outside (and NaN) count nowhere.");
  ops[4].native_half = true;  // histc's bins in the half types' arithmetic
  return ops;
}

}  // namespace tensord

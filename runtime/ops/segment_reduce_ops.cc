// segment_reduce and _segment_reduce_backward (PyTorch's aten ops;
// kernels/cpu/segment_reduce.h): data's segments along `axis` reduced by
// "sum", "mean", "max", "min" or "prod". The segment bounds are the second
// input, int64 lengths [data.shape[:axis]..., K] or, with attribute
// offsets, offsets [..., K + 1] (the schema's keyword tensors); `initial`
// counts when has_initial is set. The forward's gradient formula is the
// backward row. CPU only (in KnownCpuOnly). Half data computes in float32
// (Note [Half compute]).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/segment_reduce.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/derivatives.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/index_checks.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
constexpr char kForward[] = "segment_reduce";
constexpr char kBackward[] = "_segment_reduce_backward";

absl::StatusOr<cpu::SegmentOptions> Options(const Tensor& data,
                                            const Attrs& attrs,
                                            const char* op) {
  cpu::SegmentOptions o;
  const std::string& r = attrs.String("reduce");
  if (r == "sum") {
    o.reduce = cpu::SegmentReduction::kSum;
  } else if (r == "mean") {
    o.reduce = cpu::SegmentReduction::kMean;
  } else if (r == "max") {
    o.reduce = cpu::SegmentReduction::kMax;
  } else if (r == "min") {
    o.reduce = cpu::SegmentReduction::kMin;
  } else if (r == "prod") {
    o.reduce = cpu::SegmentReduction::kProd;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": reduce must be sum, mean, max, min or prod, got '", r, "'"));
  }
  int64_t axis = attrs.Int("axis");
  if (axis < 0) axis += data.ndim();
  if (axis < 0 || axis >= data.ndim()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": axis ", attrs.Int("axis"), " is out of range for ",
                     data.ndim(), "-d data"));
  }
  o.axis = static_cast<int>(axis);
  o.offsets = attrs.Bool("offsets");
  o.unsafe = attrs.Bool("unsafe");
  o.has_initial = attrs.Bool("has_initial");
  o.initial = attrs.Float("initial");
  return o;
}

// data floating; bounds int64 [data.shape[:axis]..., K (+ 1 for offsets)].
// Returns the output shape: data's with the axis replaced by K.
absl::StatusOr<Shape> OutputShape(const Tensor& data, const Tensor& bounds,
                                  const cpu::SegmentOptions& o,
                                  const char* op) {
  TD_RETURN_IF_ERROR(RequireFloating(data, op));
  TD_RETURN_IF_ERROR(RequireInt64(bounds, op));
  bool ok =
      bounds.ndim() == o.axis + 1 && (!o.offsets || bounds.shape().back() >= 1);
  for (int d = 0; ok && d < o.axis; ++d)
    ok = bounds.shape()[d] == data.shape()[d];
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": expected ", o.offsets ? "offsets" : "lengths",
        " of shape data.shape[:axis] + [segments", o.offsets ? " + 1" : "",
        "] for data ", ShapeToString(data.shape()), " and axis ", o.axis,
        ", got ", ShapeToString(bounds.shape())));
  }
  Shape out = data.shape();
  out[o.axis] = bounds.shape().back() - (o.offsets ? 1 : 0);
  return out;
}

Specs InferForward(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  TD_ASSIGN_OR_RETURN(cpu::SegmentOptions o, Options(in[0], attrs, kForward));
  TD_ASSIGN_OR_RETURN(Shape shape, OutputShape(in[0], in[1], o, kForward));
  return std::vector<TensorSpec>{{in[0].dtype(), shape, in[0].device()}};
}

absl::Status Forward(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(cpu::SegmentOptions o, Options(in[0], attrs, kForward));
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::SegmentReduce(c[0].view(), c[1].view(), o, out[0].view());
}

// (grad, output, data, bounds)
Specs InferBackward(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  const Tensor &g = in[0], &y = in[1], &data = in[2];
  TD_ASSIGN_OR_RETURN(cpu::SegmentOptions o, Options(data, attrs, kBackward));
  TD_ASSIGN_OR_RETURN(Shape shape, OutputShape(data, in[3], o, kBackward));
  if (g.shape() != shape || y.shape() != shape || g.dtype() != data.dtype() ||
      y.dtype() != data.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kBackward, ": expected grad and output ", ShapeToString(shape),
        " of data's dtype, got ", ShapeToString(g.shape()), " and ",
        ShapeToString(y.shape())));
  }
  return std::vector<TensorSpec>{{data.dtype(), data.shape(), data.device()}};
}

absl::Status Backward(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(cpu::SegmentOptions o, Options(in[2], attrs, kBackward));
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::SegmentReduceBackward(c[0].view(), c[1].view(), c[2].view(),
                                    c[3].view(), o, out[0].view());
}

Grads ForwardGrad(GradCtx& g) {
  Grads r(2);
  if (g.needs(0)) {
    const Attrs& a = g.attrs();
    r[0] = g.Op(kBackward, {g.grad(), g.out(0), g.in(0), g.in(1)},
                {{"reduce", a.String("reduce")},
                 {"axis", a.Int("axis")},
                 {"offsets", a.Bool("offsets")},
                 {"unsafe", a.Bool("unsafe")},
                 {"has_initial", a.Bool("has_initial")},
                 {"initial", a.Float("initial")}});
  }
  return r;
}

std::vector<AttrSpec> SegmentAttrs() {
  return {Optional("reduce", AttrType::kString, std::string("sum")),
          Optional("axis", AttrType::kInt, int64_t{0}),
          Optional("offsets", AttrType::kBool, false),
          Optional("unsafe", AttrType::kBool, false),
          Optional("has_initial", AttrType::kBool, false),
          Optional("initial", AttrType::kFloat, 0.0)};
}

}  // namespace

std::vector<GradRow> SegmentReduceGrads() {
  return {{kForward, {0, 1}, {0}, ForwardGrad}};
}

std::vector<OpDef> SegmentReduceOps() {
  const DType f = DType::kFloat32, i = DType::kInt64;
  OpDef fwd = MakeOp(
      kForward, 2, 2, SegmentAttrs(),
      "torch.segment_reduce: (data, lengths or offsets int64) -> data's "
      "segments along axis reduced by sum/mean/max/min/prod (empty: initial "
      "if has_initial, else the identity; a mean NaN).");
  fwd.infer = InferForward;
  fwd.cpu = Forward;
  // (Integer inputs are zeros: empty segments, so the lengths are unsafe.)
  fwd.examples = {Example({{4, 3}, {2}}, {{"unsafe", true}}, {f, i}),
                  Example({{2, 4}, {2, 3}},
                          {{"axis", int64_t{1}},
                           {"offsets", true},
                           {"reduce", std::string("max")}},
                          {f, i})};
  OpDef bwd = MakeOp(kBackward, 4, 4, SegmentAttrs(),
                     "(grad, output, data, lengths or offsets) -> the "
                     "gradient of segment_reduce w.r.t. data (used by "
                     "autograd).");
  bwd.differentiable = false;
  bwd.infer = InferBackward;
  bwd.cpu = Backward;
  bwd.examples = {Example({{2, 3}, {2, 3}, {4, 3}, {2}},
                          {{"reduce", std::string("prod")}}, {f, f, f, i})};
  std::vector<OpDef> ops;
  ops.push_back(std::move(fwd));
  ops.push_back(std::move(bwd));
  return ops;
}

}  // namespace tensord

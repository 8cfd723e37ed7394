// native_group_norm and native_group_norm_backward (PyTorch's aten ops of
// the same names and schemas; kernels/cpu/group_norm.h): input [N, C, *]
// seen as [N, C, HxW], C in `group` groups; mean and rstd [N, group]. The
// forward's gradient is the backward row (recorded: a composite, Note
// [Second-order fused rows] in derivatives_nn.cc). CPU only (in
// KnownCpuOnly): clients compose group_norm elsewhere.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/group_norm.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/derivatives.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using I = std::vector<int64_t>;
constexpr char kForward[] = "native_group_norm";
constexpr char kBackward[] = "native_group_norm_backward";

cpu::GroupNormShape Geometry(const Attrs& a) {
  return {a.Int("N"), a.Int("C"), a.Int("HxW"), a.Int("group")};
}

// x is [N, C, ...] of N * C * HxW values, group divides C, and in[first..]
// (weight, bias) are [C] of x's dtype.
absl::Status CheckShapes(const Tensor& x, absl::Span<const Tensor> in,
                         size_t first, const Attrs& attrs, const char* op) {
  TD_RETURN_IF_ERROR(RequireFloating(x, op));
  const cpu::GroupNormShape s = Geometry(attrs);
  bool ok = s.n >= 0 && s.c >= 0 && s.hw >= 0 && s.groups > 0 &&
            s.c % s.groups == 0 && x.ndim() >= 2 && x.shape()[0] == s.n &&
            x.shape()[1] == s.c && x.numel() == s.n * s.c * s.hw;
  for (size_t i = first; ok && i < in.size(); ++i) {
    ok = in[i].shape() == Shape{s.c} && in[i].dtype() == x.dtype();
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      op, ": expected input [N, C, *] of N * C * HxW values with C divisible "
      "by group, and weight/bias [C] of the input's dtype; got input ",
      ShapeToString(x.shape()), " with N=", s.n, ", C=", s.c, ", HxW=", s.hw,
      ", group=", s.groups));
}

// (input[, weight[, bias]]) -> (output, mean, rstd).
Specs InferForward(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  const Tensor& x = in[0];
  TD_RETURN_IF_ERROR(CheckShapes(x, in, 1, attrs, kForward));
  const Shape stats = {attrs.Int("N"), attrs.Int("group")};
  return std::vector<TensorSpec>{{x.dtype(), x.shape(), x.device()},
                                 {x.dtype(), stats, x.device()},
                                 {x.dtype(), stats, x.device()}};
}

absl::Status CpuForward(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs& attrs,
                        const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  const StridedView none{nullptr};
  return cpu::GroupNormForward(
      c[0].view(), Geometry(attrs), c.size() > 1 ? c[1].view() : none,
      c.size() > 2 ? c[2].view() : none, attrs.Float("eps"), out[0].view(),
      out[1].view(), out[2].view());
}

// (grad, input, mean, rstd[, weight]) -> (grad_input, grad_weight,
// grad_bias).
Specs InferBackward(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  const Tensor& x = in[1];  // in[0], the gradient, is checked below
  TD_RETURN_IF_ERROR(CheckShapes(x, in, 4, attrs, kBackward));
  const Shape stats = {attrs.Int("N"), attrs.Int("group")};
  for (int i : {0, 2, 3}) {
    TD_RETURN_IF_ERROR(RequireInput(kBackward, i, in[i], x.dtype(),
                                    i == 0 ? x.shape() : stats));
  }
  if (attrs.Ints("output_mask").size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(kBackward, ": output_mask must have 3 values, got ",
                     ShapeToString(attrs.Ints("output_mask"))));
  }
  const Shape w = {attrs.Int("C")};
  return std::vector<TensorSpec>{{x.dtype(), x.shape(), x.device()},
                                 {x.dtype(), w, x.device()},
                                 {x.dtype(), w, x.device()}};
}

// The outputs not asked for (output_mask 0) are zeros, not computed.
absl::Status CpuBackward(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs& attrs,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  const I& mask = attrs.Ints("output_mask");
  StridedView views[3];
  for (int i = 0; i < 3; ++i) {
    views[i] = out[i].view();
    if (mask[i] != 0) continue;
    if (out[i].nbytes() > 0) std::memset(out[i].data(), 0, out[i].nbytes());
    views[i].data = nullptr;
  }
  return cpu::GroupNormBackward(
      c[0].view(), c[1].view(), Geometry(attrs), c[2].view(), c[3].view(),
      c.size() > 4 ? c[4].view() : StridedView{nullptr}, views[0], views[1],
      views[2]);
}

std::map<std::string, AttrValue> GeometryAttrs(const Attrs& a) {
  return {{"N", a.Int("N")},
          {"C", a.Int("C")},
          {"HxW", a.Int("HxW")},
          {"group", a.Int("group")}};
}

// Recorded (create_graph), as differentiable rows over the saved input: x
// seen as [N, group, D * HxW], xhat = (x - mean) * rstd per group, gxhat =
// dy * weight[c], dx = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat *
// xhat)) per group, dweight = sum(dy * xhat), dbias = sum(dy) over all but C.
Grads ForwardGradRecorded(GradCtx& g) {
  const Shape& xs = g.in_shape(0);
  const int64_t n = g.attrs().Int("N"), groups = g.attrs().Int("group");
  int64_t numel = 1;
  for (int64_t d : xs) numel *= d;
  const int64_t len = n * groups == 0 ? 0 : numel / (n * groups);
  const Ints grouped = {n, groups, len}, whole(xs.begin(), xs.end());
  Ints per_channel(xs.size(), 1), other_dims = {0};
  per_channel[1] = xs[1];
  for (size_t d = 2; d < xs.size(); ++d) {
    other_dims.push_back(static_cast<int64_t>(d));
  }
  auto reshape = [&](const GradValue& v, const Ints& shape) {
    return g.Op("reshape", {v}, {{"shape", shape}});
  };
  auto mean = [&](const GradValue& v) {
    return g.Op("mean", {v}, {{"dim", Ints{2}}, {"keepdim", true}});
  };
  GradValue x = reshape(g.in(0), grouped), dy = g.grad();
  GradValue xc = x - mean(x);
  GradValue rstd = g.Op("rsqrt", {mean(xc * xc) + g.attrs().Float("eps")});
  GradValue xhat = xc * rstd;
  Grads r(g.num_inputs());
  if (g.needs(0)) {
    GradValue gx = reshape(
        g.num_inputs() > 1 ? dy * reshape(g.in(1), per_channel) : dy, grouped);
    r[0] = reshape(rstd * (gx - mean(gx) - xhat * mean(gx * xhat)), whole);
  }
  if (g.num_inputs() > 1 && g.needs(1)) {
    r[1] = g.Op("sum", {dy * reshape(xhat, whole)}, {{"dim", other_dims}});
  }
  if (g.num_inputs() > 2 && g.needs(2)) {
    r[2] = g.Op("sum", {dy}, {{"dim", other_dims}});
  }
  return r;
}

// The backward row from the saved input, weight, mean and rstd.
Grads ForwardGrad(GradCtx& g) {
  if (g.op_ctx().recorder != nullptr) return ForwardGradRecorded(g);
  std::vector<GradValue> in = {g.grad(), g.in(0), g.out(1), g.out(2)};
  if (g.num_inputs() > 1) in.push_back(g.in(1));
  auto attrs = GeometryAttrs(g.attrs());
  attrs["output_mask"] =
      I{g.needs(0) ? 1 : 0, g.num_inputs() > 1 && g.needs(1) ? 1 : 0,
        g.num_inputs() > 2 && g.needs(2) ? 1 : 0};
  std::vector<GradValue> d = g.Ops(kBackward, std::move(in), std::move(attrs));
  Grads r(g.num_inputs());
  for (int i = 0; i < g.num_inputs(); ++i) {
    if (g.needs(i)) r[i] = d.size() == 3 ? d[i] : d[0];  // d[0]: the error
  }
  return r;
}

std::vector<AttrSpec> GeometrySpecs() {
  return {Required("N", AttrType::kInt), Required("C", AttrType::kInt),
          Required("HxW", AttrType::kInt), Required("group", AttrType::kInt)};
}

}  // namespace

std::vector<GradRow> GroupNormGrads() {
  return {{kForward, {0, 1}, {1, 2}, ForwardGrad}};
}

std::vector<OpDef> GroupNormOps() {
  std::vector<AttrSpec> fattrs = GeometrySpecs();
  fattrs.push_back(Optional("eps", AttrType::kFloat, 1e-5));
  OpDef fwd = MakeOp(
      kForward, 1, 3, std::move(fattrs),
      "group_norm fused (aten.native_group_norm): (input[, weight[, bias]]) "
      "-> (output, mean, rstd), input [N, C, *] of N * C * HxW values, the "
      "statistics [N, group] over each group's C / group channels.");
  fwd.num_outputs = 3;
  fwd.infer = InferForward;
  fwd.cpu = CpuForward;
  const std::map<std::string, AttrValue> geo = {{"N", int64_t{2}},
                                                {"C", int64_t{4}},
                                                {"HxW", int64_t{6}},
                                                {"group", int64_t{2}}};
  std::map<std::string, AttrValue> one = {{"N", int64_t{3}},
                                          {"C", int64_t{3}},
                                          {"HxW", int64_t{5}},
                                          {"group", int64_t{1}},
                                          {"eps", 1e-3}};
  fwd.examples = {Example({{2, 4, 2, 3}, {4}, {4}}, geo),
                  Example({{3, 3, 5}}, one)};
  std::vector<AttrSpec> battrs = GeometrySpecs();
  battrs.push_back(Optional("output_mask", AttrType::kInts, I{1, 1, 1}));
  OpDef bwd = MakeOp(
      kBackward, 4, 5, std::move(battrs),
      "native_group_norm's gradients (aten.native_group_norm_backward): "
      "(grad, input, mean, rstd[, weight]) -> (grad_input, grad_weight, "
      "grad_bias); an output whose output_mask is 0 is zeros.");
  bwd.num_outputs = 3;
  bwd.infer = InferBackward;
  bwd.cpu = CpuBackward;
  bwd.differentiable = false;
  bwd.examples = {Example({{2, 4, 2, 3}, {2, 4, 2, 3}, {2, 2}, {2, 2}, {4}},
                          geo)};
  bwd.examples[0].positive = true;  // rstd is positive
  std::vector<OpDef> ops;
  ops.push_back(std::move(fwd));
  ops.push_back(std::move(bwd));
  return ops;
}

}  // namespace tensord

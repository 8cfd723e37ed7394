// embedding_bag as PyTorch's aten._embedding_bag and its backward ops
// (_embedding_bag_dense_backward, _embedding_bag_per_sample_weights_backward)
// with their schemas: modes 0/1/2 sum/mean/max, per_sample_weights (sum),
// include_last_offset, padding_idx (< 0: none). The forward's four outputs
// are the meta function's (output, offset2bag, bag_size, max_indices; Note
// [Embedding bag geometry] in kernels/cpu/embedding_bag.h), and its backward
// formula feeds them to the two backward rows. CPU only (in KnownCpuOnly):
// no sibling CUDA kernel; `sparse` gradients are not served (the clients
// keep them off the daemon). Half inputs compute in float32 (Note [Half
// compute]).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/embedding_bag.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/derivatives.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/index_checks.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
constexpr char kForward[] = "_embedding_bag";
constexpr char kDense[] = "_embedding_bag_dense_backward";
constexpr char kPsw[] = "_embedding_bag_per_sample_weights_backward";

absl::Status Bad(const char* op, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", what));
}

absl::Status Require1dInt64(const Tensor& t, const char* op, const char* arg) {
  TD_RETURN_IF_ERROR(RequireInt64(t, op));
  if (t.ndim() != 1) {
    return Bad(op, absl::StrCat("'", arg, "' must be 1-D, got shape ",
                                ShapeToString(t.shape())));
  }
  return absl::OkStatus();
}

absl::StatusOr<cpu::BagMode> Mode(const Attrs& attrs, const char* op) {
  const int64_t mode = attrs.Int("mode");
  if (mode < 0 || mode > 2) {
    return Bad(op, absl::StrCat("mode must be 0, 1 or 2 (sum, mean, max), got ",
                                mode));
  }
  return static_cast<cpu::BagMode>(mode);
}

// per_sample_weights (input `i`, when given): [N] of `like`'s dtype, sum
// mode only.
absl::Status CheckWeights(absl::Span<const Tensor> in, size_t i, int64_t n,
                          DType like, cpu::BagMode mode, const char* op) {
  if (in.size() <= i) return absl::OkStatus();
  const Tensor& w = in[i];
  if (mode != cpu::BagMode::kSum) {
    return Bad(op, "per_sample_weights only supported with mode='sum'");
  }
  if (w.dtype() != like || w.ndim() != 1 || w.shape()[0] != n) {
    return Bad(op, absl::StrCat("expected per_sample_weights of shape [", n,
                                "] and dtype ", DTypeName(like), ", got ",
                                DTypeName(w.dtype()), ShapeToString(w.shape())));
  }
  return absl::OkStatus();
}

// ---- _embedding_bag(weight, indices, offsets, per_sample_weights?)
Specs InferForward(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  const Tensor &w = in[0], &idx = in[1], &off = in[2];
  TD_RETURN_IF_ERROR(RequireFloating(w, kForward));
  if (w.ndim() != 2) {
    return Bad(kForward, absl::StrCat("'weight' must be 2-D, got shape ",
                                      ShapeToString(w.shape())));
  }
  TD_RETURN_IF_ERROR(Require1dInt64(idx, kForward, "indices"));
  TD_RETURN_IF_ERROR(Require1dInt64(off, kForward, "offsets"));
  TD_ASSIGN_OR_RETURN(cpu::BagMode mode, Mode(attrs, kForward));
  TD_RETURN_IF_ERROR(
      CheckWeights(in, 3, idx.shape()[0], w.dtype(), mode, kForward));
  int64_t bags = off.shape()[0];
  if (attrs.Bool("include_last_offset")) {
    if (bags < 1) {
      return Bad(kForward, "include_last_offset: numBags should be at least 1");
    }
    --bags;
  }
  const int64_t dim = w.shape()[1];
  Device* dev = w.device();
  const Shape max_shape =
      mode == cpu::BagMode::kMax ? Shape{bags, dim} : Shape{0};
  return std::vector<TensorSpec>{{w.dtype(), {bags, dim}, dev},
                                 {DType::kInt64, idx.shape(), dev},
                                 {DType::kInt64, off.shape(), dev},
                                 {DType::kInt64, max_shape, dev}};
}

cpu::BagOptions Options(const Attrs& attrs, bool with_last_offset) {
  cpu::BagOptions o;
  o.mode = static_cast<cpu::BagMode>(attrs.Int("mode"));
  o.include_last_offset = with_last_offset && attrs.Bool("include_last_offset");
  o.padding_idx = attrs.Int("padding_idx");
  return o;
}

StridedView OptionalView(const std::vector<Tensor>& c, size_t i) {
  return c.size() > i ? c[i].view() : StridedView{};
}

absl::Status Forward(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::EmbeddingBag(c[0].view(), c[1].view(), c[2].view(),
                           OptionalView(c, 3), Options(attrs, true),
                           out[0].view(), out[1].view(), out[2].view(),
                           out[3].view());
}

// ---- _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size,
//      max_indices, per_sample_weights?)
Specs InferDense(absl::Span<const Tensor> in, const Attrs& attrs,
                 const OpContext&) {
  const Tensor& g = in[0];
  TD_RETURN_IF_ERROR(RequireFloating(g, kDense));
  if (g.ndim() != 2) {
    return Bad(kDense, absl::StrCat("'grad' must be 2-D, got shape ",
                                    ShapeToString(g.shape())));
  }
  const int64_t n = in[1].numel(), bags = g.shape()[0];
  const char* names[] = {"indices", "offset2bag", "bag_size"};
  for (int i = 1; i <= 3; ++i) {
    TD_RETURN_IF_ERROR(Require1dInt64(in[i], kDense, names[i - 1]));
  }
  TD_RETURN_IF_ERROR(RequireInt64(in[4], kDense));
  TD_ASSIGN_OR_RETURN(cpu::BagMode mode, Mode(attrs, kDense));
  if (in[2].numel() != n || in[3].numel() < bags ||
      (mode == cpu::BagMode::kMax &&
       in[4].shape() != Shape{bags, g.shape()[1]})) {
    return Bad(kDense,
               absl::StrCat("expected offset2bag [", n, "], bag_size of at "
                            "least ", bags, " entries and (max mode) "
                            "max_indices [",
                            bags, ", ", g.shape()[1], "], got ",
                            ShapeToString(in[2].shape()), ", ",
                            ShapeToString(in[3].shape()), " and ",
                            ShapeToString(in[4].shape())));
  }
  TD_RETURN_IF_ERROR(CheckWeights(in, 5, n, g.dtype(), mode, kDense));
  const int64_t rows = attrs.Int("num_weights");
  if (rows < 0) return Bad(kDense, "num_weights must not be negative");
  return std::vector<TensorSpec>{{g.dtype(), {rows, g.shape()[1]}, g.device()}};
}

absl::Status Dense(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                   const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::EmbeddingBagDenseBackward(
      c[0].view(), c[1].view(), c[2].view(), c[3].view(), c[4].view(),
      OptionalView(c, 5), Options(attrs, false),
      attrs.Bool("scale_grad_by_freq"), out[0].view());
}

// ---- _embedding_bag_per_sample_weights_backward(grad, weight, indices,
//      offsets, offset2bag)
Specs InferPsw(absl::Span<const Tensor> in, const Attrs& attrs,
               const OpContext&) {
  const Tensor &g = in[0], &w = in[1];
  TD_RETURN_IF_ERROR(RequireFloating(g, kPsw));
  TD_ASSIGN_OR_RETURN(cpu::BagMode mode, Mode(attrs, kPsw));
  if (mode != cpu::BagMode::kSum) {
    return Bad(kPsw, "per_sample_weights only supported with mode='sum'");
  }
  if (g.ndim() != 2 || w.ndim() != 2 || g.shape()[1] != w.shape()[1] ||
      w.dtype() != g.dtype()) {
    return Bad(kPsw, absl::StrCat("expected grad [B, D] and weight [V, D] of "
                                  "one dtype, got ",
                                  DTypeName(g.dtype()),
                                  ShapeToString(g.shape()), " and ",
                                  DTypeName(w.dtype()),
                                  ShapeToString(w.shape())));
  }
  const char* names[] = {"indices", "offsets", "offset2bag"};
  for (int i = 2; i <= 4; ++i) {
    TD_RETURN_IF_ERROR(Require1dInt64(in[i], kPsw, names[i - 2]));
  }
  if (in[4].numel() != in[2].numel()) {
    return Bad(kPsw, absl::StrCat("offset2bag ", ShapeToString(in[4].shape()),
                                  " must match indices ",
                                  ShapeToString(in[2].shape())));
  }
  return std::vector<TensorSpec>{{g.dtype(), in[2].shape(), g.device()}};
}

absl::Status Psw(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                 const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::EmbeddingBagPerSampleWeightsBackward(
      c[0].view(), c[1].view(), c[2].view(), c[4].view(),
      attrs.Int("padding_idx"), out[0].view());
}

// derivatives.yaml's _embedding_bag: weight through the dense backward
// (from the forward's offset2bag, bag_size, max_indices), per_sample_weights
// through its own row; indices and offsets have none.
Grads ForwardGrad(GradCtx& g) {
  Grads r(g.num_inputs());
  const Attrs& a = g.attrs();
  if (g.needs(0)) {
    std::vector<GradValue> in = {g.grad(), g.in(1), g.out(1), g.out(2),
                                 g.out(3)};
    if (g.num_inputs() == 4) in.push_back(g.in(3));
    r[0] = g.Op(kDense, std::move(in),
                {{"num_weights", g.in_shape(0)[0]},
                 {"scale_grad_by_freq", a.Bool("scale_grad_by_freq")},
                 {"mode", a.Int("mode")},
                 {"padding_idx", a.Int("padding_idx")}});
  }
  if (g.num_inputs() == 4 && g.needs(3)) {
    r[3] = g.Op(kPsw, {g.grad(), g.in(0), g.in(1), g.in(2), g.out(1)},
                {{"mode", a.Int("mode")}, {"padding_idx", a.Int("padding_idx")}});
  }
  return r;
}

AttrSpec ModeAttr() { return Optional("mode", AttrType::kInt, int64_t{0}); }
AttrSpec PaddingAttr() {
  return Optional("padding_idx", AttrType::kInt, int64_t{-1});
}
AttrSpec FreqAttr() {
  return Optional("scale_grad_by_freq", AttrType::kBool, false);
}

}  // namespace

std::vector<GradRow> EmbeddingBagGrads() {
  return {{kForward, {0, 1, 2, 3}, {1, 2, 3}, ForwardGrad}};
}

std::vector<OpDef> EmbeddingBagOps() {
  const DType f = DType::kFloat32, i = DType::kInt64;
  OpDef fwd = MakeOp(
      kForward, 3, 4,
      {FreqAttr(), ModeAttr(),
       Optional("include_last_offset", AttrType::kBool, false), PaddingAttr()},
      "torch.nn.functional.embedding_bag's op (aten._embedding_bag): "
      "(weight [V, D], indices [N], offsets [O], per_sample_weights [N]?) -> "
      "(output [B, D], offset2bag [N], bag_size [O], max_indices [B, D] in "
      "max mode else [0]); mode 0/1/2 sum/mean/max, padding_idx < 0 none.");
  fwd.num_outputs = 4;
  fwd.infer = InferForward;
  fwd.cpu = Forward;
  fwd.examples = {Example({{5, 3}, {4}, {2}}, {}, {f, i, i}),
                  Example({{5, 3}, {4}, {3}},
                          {{"mode", int64_t{2}}, {"include_last_offset", true}},
                          {f, i, i}),
                  Example({{5, 3}, {4}, {2}, {4}}, {{"padding_idx", int64_t{1}}},
                          {f, i, i, f})};
  OpDef dense = MakeOp(
      kDense, 5, 6,
      {Required("num_weights", AttrType::kInt), FreqAttr(), ModeAttr(),
       PaddingAttr()},
      "(grad, indices, offset2bag, bag_size, max_indices, "
      "per_sample_weights?) -> the weight's gradient [num_weights, D] of "
      "_embedding_bag (used by autograd).");
  dense.differentiable = false;
  dense.infer = InferDense;
  dense.cpu = Dense;
  dense.examples = {
      Example({{2, 3}, {4}, {4}, {2}, {0}}, {{"num_weights", int64_t{5}}},
              {f, i, i, i, i}),
      Example({{2, 3}, {4}, {4}, {2}, {2, 3}},
              {{"num_weights", int64_t{5}}, {"mode", int64_t{2}}},
              {f, i, i, i, i})};
  OpDef psw = MakeOp(
      kPsw, 5, 5, {ModeAttr(), PaddingAttr()},
      "(grad, weight, indices, offsets, offset2bag) -> the gradient [N] of "
      "_embedding_bag's per_sample_weights (sum mode; used by autograd).");
  psw.differentiable = false;
  psw.infer = InferPsw;
  psw.cpu = Psw;
  psw.examples = {
      Example({{2, 3}, {5, 3}, {4}, {2}, {4}}, {}, {f, f, i, i, i})};
  std::vector<OpDef> ops;
  ops.push_back(std::move(fwd));
  ops.push_back(std::move(dense));
  ops.push_back(std::move(psw));
  return ops;
}

}  // namespace tensord

// embedding as torch.embedding (a composite: index_select of the weight's
// rows) with its own backward formula, and embedding_dense_backward, ATen's
// row for the weight's gradient (Note [Embedding gradient rows] in
// kernels/cpu/embedding.h): one pass that writes the whole table, instead of
// a zero table, its copy and a row scatter_add. The dense backward row is
// CPU only (in KnownCpuOnly); on other devices the formula composes zeros,
// where and scatter_add. Indices are int64 or int32.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/embedding.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/derivatives.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
constexpr char kDense[] = "embedding_dense_backward";

absl::Status RequireIndexDType(const Tensor& t, const char* op) {
  if (t.dtype() == DType::kInt64 || t.dtype() == DType::kInt32) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": expected indices of dtype int64 or int32, got ",
                   DTypeName(t.dtype())));
}

// embedding(weight, indices; padding_idx, scale_grad_by_freq): the two
// attributes only change the gradient (EmbeddingGrad).
absl::StatusOr<std::vector<Tensor>> Embedding(absl::Span<const Tensor> in,
                                              const Attrs&,
                                              const OpContext& ctx) {
  if (in[0].ndim() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding: 'weight' must be 2-D, got shape ",
                     ShapeToString(in[0].shape())));
  }
  TD_RETURN_IF_ERROR(RequireIndexDType(in[1], "embedding"));
  Tensor index = in[1];
  if (index.dtype() != DType::kInt64) {
    TD_ASSIGN_OR_RETURN(index,
                        Call1("to", {index}, {{"dtype", DType::kInt64}}, ctx));
  }
  TD_ASSIGN_OR_RETURN(
      Tensor flat,
      Call1("reshape", {index}, {{"shape", std::vector<int64_t>{-1}}}, ctx));
  absl::StatusOr<Tensor> rows =
      Call1("index_select", {in[0], flat}, {{"dim", int64_t{0}}}, ctx);
  if (!rows.ok()) {  // an index out of range: say whose
    return absl::Status(rows.status().code(),
                        absl::StrCat("embedding: ", rows.status().message()));
  }
  std::vector<int64_t> shape(in[1].shape().begin(), in[1].shape().end());
  shape.push_back(in[0].shape()[1]);
  TD_ASSIGN_OR_RETURN(Tensor out,
                      Call1("reshape", {*rows}, {{"shape", shape}}, ctx));
  return std::vector<Tensor>{out};
}

// (grad [*, D], indices [*]) -> [num_weights, D].
Specs InferDense(absl::Span<const Tensor> in, const Attrs& attrs,
                 const OpContext&) {
  const Tensor &g = in[0], &idx = in[1];
  TD_RETURN_IF_ERROR(RequireIndexDType(idx, kDense));
  const int64_t v = attrs.Int("num_weights");
  if (!IsFloating(g.dtype()) || g.ndim() < 1 || v < 0 ||
      g.numel() != idx.numel() * g.shape().back()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kDense, ": expected a floating grad of shape indices.shape + [D] and "
                "num_weights >= 0, got grad ",
        DTypeName(g.dtype()), ShapeToString(g.shape()), ", indices ",
        ShapeToString(idx.shape()), " and num_weights ", v));
  }
  return std::vector<TensorSpec>{
      {g.dtype(), Shape{v, g.shape().back()}, g.device()}};
}

absl::Status Dense(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                   const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::EmbeddingDenseBackward(c[0].view(), c[1].view(),
                                     attrs.Int("padding_idx"),
                                     attrs.Bool("scale_grad_by_freq"),
                                     out[0].view());
}

// Off the CPU: zeros with the rows scatter_added, a padding_idx row's
// gradient masked out first; scale_grad_by_freq divides each row by its
// index's count (a scatter_add of ones, gathered back).
GradValue ComposedDense(GradCtx& g, const GradValue& grad, int64_t pad,
                        bool freq) {
  const int64_t d = g.in_shape(0)[1];
  GradValue flat = g.Op("reshape", {grad}, {{"shape", Ints{-1, d}}});
  GradValue idx = g.in(1);
  if (g.in_dtype(1) != DType::kInt64) idx = Cast(g, idx, DType::kInt64);
  idx = g.Op("reshape", {idx}, {{"shape", Ints{-1, 1}}});
  if (pad >= 0) {
    GradValue hit = Cmp(g, "eq", idx, g.Num(static_cast<double>(pad), idx));
    flat = Where(g, hit, Zero(g, flat), flat);
  }
  idx = g.Op("expand", {idx}, {{"size", Ints{-1, d}}});
  GradValue zeros = Cast(g, g.ZerosOfInput(0), grad.value()->dtype());
  if (freq) {
    GradValue counts = g.Op("scatter_add", {zeros, idx, g.Num(1, flat)},
                            {{"dim", int64_t{0}}});
    flat = flat / g.Op("gather", {counts, idx}, {{"dim", int64_t{0}}});
  }
  return g.Op("scatter_add", {zeros, idx, flat}, {{"dim", int64_t{0}}});
}

// derivatives.yaml's embedding: weight through embedding_dense_backward.
Grads EmbeddingGrad(GradCtx& g) {
  GradValue gr = g.grad();
  if (!g.needs(0)) return {GradValue(), GradValue()};
  if (!gr.value().ok()) return {gr, GradValue()};
  const int64_t pad = g.attrs().Int("padding_idx");
  const bool freq = g.attrs().Bool("scale_grad_by_freq");
  if (gr.value()->device()->kind() != DeviceKind::kCpu) {
    return {ComposedDense(g, gr, pad, freq), GradValue()};
  }
  return {g.Op(kDense, {gr, g.in(1)},
               {{"num_weights", g.in_shape(0)[0]},
                {"padding_idx", pad},
                {"scale_grad_by_freq", freq}}),
          GradValue()};
}

AttrSpec PaddingAttr() {
  return Optional("padding_idx", AttrType::kInt, int64_t{-1});
}
AttrSpec FreqAttr() {
  return Optional("scale_grad_by_freq", AttrType::kBool, false);
}

}  // namespace

std::vector<GradRow> EmbeddingGrads() {
  return {{"embedding", {1}, {}, EmbeddingGrad}};
}

std::vector<OpDef> EmbeddingOps() {
  const DType f = DType::kFloat32, i64 = DType::kInt64, i32 = DType::kInt32;
  OpDef emb = MakeOp(
      "embedding", 2, 2, {PaddingAttr(), FreqAttr()},
      "Rows of weight picked by int64/int32 indices (torch.embedding); "
      "padding_idx (< 0: none) gets no gradient, scale_grad_by_freq divides "
      "each row's gradient by its index's count.");
  emb.composite = Embedding;
  emb.differentiable = true;
  emb.examples = {Example({{5, 3}, {2, 4}}, {}, {f, i64}),
                  Example({{5, 3}, {4}}, {{"padding_idx", int64_t{1}}},
                          {f, i32})};
  OpDef dense = MakeOp(
      kDense, 2, 2,
      {Required("num_weights", AttrType::kInt), PaddingAttr(), FreqAttr()},
      "(grad [*, D], indices [*]) -> embedding's weight gradient "
      "[num_weights, D] (aten.embedding_dense_backward; used by autograd).");
  dense.differentiable = false;
  dense.infer = InferDense;
  dense.cpu = Dense;
  dense.examples = {
      Example({{2, 4, 3}, {2, 4}}, {{"num_weights", int64_t{5}}}, {f, i64}),
      Example({{4, 3}, {4}},
              {{"num_weights", int64_t{5}},
               {"padding_idx", int64_t{0}},
               {"scale_grad_by_freq", true}},
              {f, i32})};
  std::vector<OpDef> ops;
  ops.push_back(std::move(emb));
  ops.push_back(std::move(dense));
  return ops;
}

}  // namespace tensord

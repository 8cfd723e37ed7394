// scaled_dot_product_attention: softmax(query key^T * scale + mask) value, as
// torch.nn.functional's (no dropout: the clients compose that case). The
// composite row validates, handles grouped-query attention by reshaping (the
// query's heads grouped over the key's: [..., Hk, G, L, E] against
// [..., Hk, 1, S, E]) and runs
// - on the CPU the fused row scaled_dot_product_flash_attention (one kernel
//   each way, kernels/cpu/attention.h; its gradient in attention_compose.cc),
// - elsewhere, and for a float mask that requires grad (the fused backward
//   gives no mask gradient), the composition matmul, mul, masked_fill/add,
//   softmax, matmul. A query that may attend to no key gives 0 in the fused
//   row (PyTorch's flash kernel) and NaN composed (PyTorch's math path).
// The fused rows are CPU only (KnownCpuOnly in known_cpu_only.cc).
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/attention.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/attention.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {

double AttentionScale(const Attrs& attrs, int64_t e) {
  return attrs.Has("scale") ? attrs.Float("scale")
                            : 1.0 / std::sqrt(static_cast<double>(e));
}

absl::StatusOr<AttentionDims> CheckAttention(const Tensor& q, const Tensor& k,
                                             const Tensor& v,
                                             const Tensor* mask, bool causal,
                                             const char* op) {
  TD_RETURN_IF_ERROR(RequireFloating(q, op));
  if (q.ndim() < 2 || k.ndim() < 2 || v.ndim() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": query, key and value need at least 2 dims, got ",
                     ShapeToString(q.shape()), ", ", ShapeToString(k.shape()),
                     " and ", ShapeToString(v.shape())));
  }
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": query, key and value must have the same dtype, got ",
        DTypeName(q.dtype()), ", ", DTypeName(k.dtype()), " and ",
        DTypeName(v.dtype())));
  }
  AttentionDims d;
  d.l = q.shape()[q.ndim() - 2];
  d.e = q.shape()[q.ndim() - 1];
  d.s = k.shape()[k.ndim() - 2];
  d.ev = v.shape()[v.ndim() - 1];
  if (k.shape()[k.ndim() - 1] != d.e || v.shape()[v.ndim() - 2] != d.s) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": query ", ShapeToString(q.shape()), " and key ",
        ShapeToString(k.shape()), " must share the last dim, key and value ",
        ShapeToString(v.shape()), " the next-to-last"));
  }
  auto batch = [](const Tensor& t) {
    return Shape(t.shape().begin(), t.shape().end() - 2);
  };
  TD_ASSIGN_OR_RETURN(d.batch, BroadcastShapes(batch(q), batch(k)));
  TD_ASSIGN_OR_RETURN(d.batch, BroadcastShapes(d.batch, batch(v)));
  if (mask != nullptr) {
    if (causal) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": pass either attn_mask or is_causal=True, not both"));
    }
    if (mask->dtype() != DType::kBool && mask->dtype() != q.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": attn_mask must be bool or of the query's dtype (",
          DTypeName(q.dtype()), "), got ", DTypeName(mask->dtype())));
    }
    Shape full = d.batch;
    full.push_back(d.l);
    full.push_back(d.s);
    auto b = BroadcastShapes(mask->shape(), full);
    if (!b.ok() || *b != full) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": attn_mask ", ShapeToString(mask->shape()),
          " does not broadcast to the scores' shape ", ShapeToString(full)));
    }
  }
  return d;
}

DType AttentionLseType(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16 ? DType::kFloat32
                                                               : dtype;
}

Shape WithTail(Shape batch, std::initializer_list<int64_t> tail) {
  for (int64_t t : tail) batch.push_back(t);
  return batch;
}

namespace {

// Element offsets of each problem's [rows, cols] matrix in `t` seen with
// `batch` as its leading dims (Note [Attention geometry]); `view` gets that
// broadcast view (its data pointer and strides).
std::vector<int64_t> BatchOffsets(const Tensor& t, const Shape& batch,
                                  int64_t rows, int64_t cols,
                                  StridedView* view) {
  *view = t.BroadcastView(WithTail(batch, {rows, cols}));
  const int nb = static_cast<int>(batch.size());
  int64_t count = 1;
  for (int64_t s : batch) count *= s;
  std::vector<int64_t> off(count), idx(nb, 0);
  int64_t cur = 0;
  for (int64_t b = 0; b < count; ++b) {
    off[b] = cur;
    for (int d = nb - 1; d >= 0; --d) {
      if (++idx[d] < view->sizes[d]) {
        cur += view->strides[d];
        break;
      }
      cur -= view->strides[d] * (view->sizes[d] - 1);
      idx[d] = 0;
    }
  }
  return off;
}

// `t` as the kernel reads it (Note [Attention geometry]): itself when its
// last dim is unit-stride and its rows are at least a row apart (a head's
// view into a wider projection row: GPT's q, k, v), else a contiguous copy.
absl::StatusOr<Tensor> KernelRows(const Tensor& t, const OpContext& ctx) {
  const int n = t.ndim();
  if (n >= 2) {
    const int64_t rows = t.shape()[n - 2], cols = t.shape()[n - 1];
    const int64_t row_stride = t.strides()[n - 2];
    if ((cols == 1 || t.strides()[n - 1] == 1) &&
        (rows == 1 || row_stride >= std::max<int64_t>(cols, 1))) {
      return t;
    }
  }
  return Contiguous(t, ctx);
}

absl::StatusOr<std::vector<Tensor>> KernelRowsAll(absl::Span<const Tensor> in,
                                                  const OpContext& ctx) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) {
    TD_ASSIGN_OR_RETURN(Tensor r, KernelRows(t, ctx));
    out.push_back(std::move(r));
  }
  return out;
}

// Row stride of the [rows, cols] matrices of `v`, `nb` batch dims ahead.
int64_t RowStride(const StridedView& v, int nb, int64_t cols) {
  return v.sizes[nb] <= 1 ? std::max<int64_t>(cols, 1) : v.strides[nb];
}

// The kernel's geometry over q, k, v (c[0..2], KernelRows) and the mask,
// with the offset arrays it points into and the views whose data the
// kernel reads.
struct Geometry {
  cpu::AttentionGeometry g;
  std::vector<int64_t> q_off, k_off, v_off, m_off, dout_off;
  StridedView qv, kv, vv, mv, doutv;
};

void BuildGeometry(const AttentionDims& d, const std::vector<Tensor>& c,
                   const Tensor* mask, const Attrs& attrs, Geometry* geo) {
  cpu::AttentionGeometry& g = geo->g;
  g.batch = 1;
  for (int64_t s : d.batch) g.batch *= s;
  g.l = d.l, g.s = d.s, g.e = d.e, g.ev = d.ev;
  g.scale = AttentionScale(attrs, d.e);
  g.causal = attrs.Bool("is_causal");
  geo->q_off = BatchOffsets(c[0], d.batch, d.l, d.e, &geo->qv);
  geo->k_off = BatchOffsets(c[1], d.batch, d.s, d.e, &geo->kv);
  geo->v_off = BatchOffsets(c[2], d.batch, d.s, d.ev, &geo->vv);
  g.q_off = geo->q_off.data();
  g.k_off = geo->k_off.data();
  g.v_off = geo->v_off.data();
  const int nbatch = static_cast<int>(d.batch.size());
  g.q_row = RowStride(geo->qv, nbatch, d.e);
  g.k_row = RowStride(geo->kv, nbatch, d.e);
  g.v_row = RowStride(geo->vv, nbatch, d.ev);
  if (mask != nullptr) {
    geo->m_off = BatchOffsets(*mask, d.batch, d.l, d.s, &geo->mv);
    const int nb = static_cast<int>(d.batch.size());
    g.mask = geo->mv.data;
    g.mask_is_bool = mask->dtype() == DType::kBool;
    g.mask_off = geo->m_off.data();
    g.mask_row = geo->mv.strides[nb];
    g.mask_col = geo->mv.strides[nb + 1];
  }
}

const Tensor* MaskOf(absl::Span<const Tensor> in, size_t at) {
  return in.size() > at ? &in[at] : nullptr;
}

// (query, key, value[, attn_mask]) -> (output, logsumexp).
absl::StatusOr<std::vector<TensorSpec>> InferForward(
    absl::Span<const Tensor> in, const Attrs& attrs, const OpContext&) {
  TD_ASSIGN_OR_RETURN(AttentionDims d,
                      CheckAttention(in[0], in[1], in[2], MaskOf(in, 3),
                                     attrs.Bool("is_causal"),
                                     "scaled_dot_product_flash_attention"));
  const Tensor& q = in[0];
  return std::vector<TensorSpec>{
      {q.dtype(), WithTail(d.batch, {d.l, d.ev}), q.device()},
      {AttentionLseType(q.dtype()), WithTail(d.batch, {d.l}), q.device()}};
}

absl::Status CpuForward(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs& attrs,
                        const OpContext& ctx) {
  const Tensor* mask = MaskOf(in, 3);
  TD_ASSIGN_OR_RETURN(AttentionDims d,
                      CheckAttention(in[0], in[1], in[2], mask,
                                     attrs.Bool("is_causal"), "attention"));
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c,
                      KernelRowsAll(in.subspan(0, 3), ctx));
  if (out[1].numel() == 0) return absl::OkStatus();  // no query at all
  Geometry geo;
  BuildGeometry(d, c, mask, attrs, &geo);
  if (in[0].dtype() == DType::kFloat64) {
    cpu::AttentionForward<double>(
        geo.g, geo.qv.ptr<double>(), geo.kv.ptr<double>(), geo.vv.ptr<double>(),
        out[0].view().ptr<double>(), out[1].view().ptr<double>());
  } else {
    cpu::AttentionForward<float>(
        geo.g, geo.qv.ptr<float>(), geo.kv.ptr<float>(), geo.vv.ptr<float>(),
        out[0].view().ptr<float>(), out[1].view().ptr<float>());
  }
  return absl::OkStatus();
}

// (grad, query, key, value, output, logsumexp[, attn_mask]) ->
// (grad_query, grad_key, grad_value), each of the broadcast batch shape.
absl::StatusOr<std::vector<TensorSpec>> InferBackward(
    absl::Span<const Tensor> in, const Attrs& attrs, const OpContext&) {
  const char* op = "scaled_dot_product_flash_attention_backward";
  TD_ASSIGN_OR_RETURN(AttentionDims d,
                      CheckAttention(in[1], in[2], in[3], MaskOf(in, 6),
                                     attrs.Bool("is_causal"), op));
  const Tensor& q = in[1];
  const Shape o = WithTail(d.batch, {d.l, d.ev});
  TD_RETURN_IF_ERROR(RequireInput(op, 0, in[0], q.dtype(), o));
  TD_RETURN_IF_ERROR(RequireInput(op, 4, in[4], q.dtype(), o));
  // logsumexp: float32 for half queries (as the forward makes it), or of
  // the query's dtype (both computed in float32: Note [Half compute]).
  const DType lse_type =
      in[5].dtype() == q.dtype() ? q.dtype() : AttentionLseType(q.dtype());
  TD_RETURN_IF_ERROR(
      RequireInput(op, 5, in[5], lse_type, WithTail(d.batch, {d.l})));
  return std::vector<TensorSpec>{
      {q.dtype(), WithTail(d.batch, {d.l, d.e}), q.device()},
      {q.dtype(), WithTail(d.batch, {d.s, d.e}), q.device()},
      {q.dtype(), WithTail(d.batch, {d.s, d.ev}), q.device()}};
}

absl::Status CpuBackward(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs& attrs,
                         const OpContext& ctx) {
  const Tensor* mask = MaskOf(in, 6);
  TD_ASSIGN_OR_RETURN(AttentionDims d,
                      CheckAttention(in[1], in[2], in[3], mask,
                                     attrs.Bool("is_causal"), "attention"));
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c,
                      KernelRowsAll(in.subspan(0, 4), ctx));
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> saved,
                      ContiguousAll(in.subspan(4, 2), ctx));
  c.insert(c.end(), saved.begin(), saved.end());
  if (out[0].numel() + out[1].numel() + out[2].numel() == 0) {
    return absl::OkStatus();
  }
  const std::vector<Tensor> qkv = {c[1], c[2], c[3]};
  Geometry geo;
  BuildGeometry(d, qkv, mask, attrs, &geo);
  if (geo.g.batch == 0) return absl::OkStatus();
  // The output's gradient: [batch..., L, Ev] as the output (InferBackward).
  geo.dout_off = BatchOffsets(c[0], d.batch, d.l, d.ev, &geo.doutv);
  geo.g.dout_off = geo.dout_off.data();
  geo.g.dout_row =
      RowStride(geo.doutv, static_cast<int>(d.batch.size()), d.ev);
  if (in[1].dtype() == DType::kFloat64) {
    cpu::AttentionBackward<double>(
        geo.g, geo.doutv.ptr<double>(), geo.qv.ptr<double>(),
        geo.kv.ptr<double>(), geo.vv.ptr<double>(), c[4].view().ptr<double>(),
        c[5].view().ptr<double>(), out[0].view().ptr<double>(),
        out[1].view().ptr<double>(), out[2].view().ptr<double>());
  } else {
    cpu::AttentionBackward<float>(
        geo.g, geo.doutv.ptr<float>(), geo.qv.ptr<float>(),
        geo.kv.ptr<float>(), geo.vv.ptr<float>(), c[4].view().ptr<float>(),
        c[5].view().ptr<float>(), out[0].view().ptr<float>(),
        out[1].view().ptr<float>(), out[2].view().ptr<float>());
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<OpDef> AttentionOps() {
  std::vector<OpDef> ops;
  const AttrSpec causal = Optional("is_causal", AttrType::kBool, false);
  const AttrSpec scale = Optional("scale", AttrType::kFloat, std::monostate{});
  const AttrSpec gqa = Optional("enable_gqa", AttrType::kBool, false);
  OpDef sdpa = MakeOp(
      "scaled_dot_product_attention", 3, 4, {causal, scale, gqa},
      "softmax(query @ key^T * scale + attn_mask) @ value over (..., L, E) "
      "queries, (..., S, E) keys and (..., S, Ev) values; attn_mask (bool: "
      "True may attend; float: added) broadcasts to (..., L, S); is_causal "
      "masks keys after each query (top-left aligned); scale defaults to "
      "1/sqrt(E); enable_gqa lets the key and value have fewer heads (dim "
      "-3) than the query. torch.nn.functional's without dropout.");
  sdpa.composite = ScaledDotProductAttention;
  sdpa.examples = {
      Example({{2, 3, 5, 4}, {2, 3, 7, 4}, {2, 3, 7, 6}}),
      Example({{2, 5, 4}, {2, 5, 4}, {2, 5, 4}}, {{"is_causal", true}}),
      Example({{2, 4, 5, 4}, {2, 2, 7, 4}, {2, 2, 7, 3}, {5, 7}},
              {{"enable_gqa", true}, {"scale", 0.5}})};
  ops.push_back(std::move(sdpa));
  OpDef fwd =
      MakeOp("scaled_dot_product_flash_attention", 3, 4, {causal, scale},
             "scaled_dot_product_attention fused (CPU): (query, key, "
             "value[, attn_mask]) -> (output, logsumexp), the "
             "log-sum-exp of each query's scores (float32 for half "
             "inputs), batch dims broadcast.");
  fwd.num_outputs = 2;
  fwd.infer = InferForward;
  fwd.cpu = CpuForward;
  fwd.examples = {
      Example({{2, 3, 4}, {2, 5, 4}, {2, 5, 6}}),
      Example(
          {{2, 3, 4}, {1, 5, 4}, {5, 6}, {3, 5}}, {{"scale", 0.3}},
          {DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kBool}),
      Example({{6, 4}, {5, 4}, {5, 2}}, {{"is_causal", true}})};
  ops.push_back(std::move(fwd));
  OpDef bwd = MakeOp("scaled_dot_product_flash_attention_backward", 6, 7,
                     {causal, scale},
                     "scaled_dot_product_flash_attention's gradients: (grad, "
                     "query, key, value, output, logsumexp[, attn_mask]) -> "
                     "(grad_query, grad_key, grad_value) of the broadcast "
                     "batch shape.");
  bwd.num_outputs = 3;
  bwd.infer = InferBackward;
  bwd.cpu = CpuBackward;
  bwd.differentiable = false;
  bwd.examples = {
      Example({{2, 3, 6}, {2, 3, 4}, {2, 5, 4}, {2, 5, 6}, {2, 3, 6}, {2, 3}},
              {{"is_causal", true}})};
  ops.push_back(std::move(bwd));
  return ops;
}

}  // namespace tensord

// The composite row scaled_dot_product_attention (attention_ops.cc's header
// comment says when it takes the fused row), the composed attention weights
// and the fused row's gradient (AttentionGrads, attached with the other
// formulas by derivatives.cc).
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/device.h"
#include "runtime/ops/attention.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/derivatives.h"
#include "runtime/ops/op_helpers.h"

namespace tensord {
namespace {

using Ints = std::vector<int64_t>;

absl::StatusOr<Tensor> MaskedOut(const Tensor& scores, const Tensor& blocked,
                                 const ComposeOps& op) {
  TD_ASSIGN_OR_RETURN(Tensor ninf,
                      op.Num(-std::numeric_limits<double>::infinity(), scores));
  return op("masked_fill", {scores, blocked, ninf});
}

// Grouped-query attention as a broadcast: query [..., Hq, L, E] viewed as
// [..., Hk, Hq / Hk, L, E], key and value [..., Hk, 1, S, *], the mask
// expanded to the scores' shape and viewed the same way.
struct Grouped {
  Tensor q, k, v, mask;
  bool has_mask = false;
};

absl::StatusOr<Grouped> Group(absl::Span<const Tensor> in,
                              const ComposeOps& op) {
  const Tensor &q = in[0], &k = in[1], &v = in[2];
  Grouped r{q, k, v, in.size() > 3 ? in[3] : Tensor(), in.size() > 3};
  if (q.ndim() < 3 || k.ndim() < 3 || v.ndim() < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scaled_dot_product_attention: enable_gqa needs a head dim (-3) in "
        "query, key and value, got ",
        ShapeToString(q.shape()), ", ", ShapeToString(k.shape()), " and ",
        ShapeToString(v.shape())));
  }
  const int64_t hq = q.shape()[q.ndim() - 3], hk = k.shape()[k.ndim() - 3];
  if (hk == 0 || hq % hk != 0 || v.shape()[v.ndim() - 3] != hk) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scaled_dot_product_attention: with enable_gqa the query's heads (", hq,
        ") must be a multiple of the key's (", hk,
        ") and the value must have as many as the key (",
        v.shape()[v.ndim() - 3], ")"));
  }
  if (hq == hk) return r;
  const int64_t l = q.shape()[q.ndim() - 2], e = q.shape()[q.ndim() - 1];
  const int64_t s = k.shape()[k.ndim() - 2];
  Ints qs(q.shape().begin(), q.shape().end() - 3);
  for (int64_t n : {hk, hq / hk, l, e}) qs.push_back(n);
  TD_ASSIGN_OR_RETURN(r.q, op("reshape", {q}, {{"shape", qs}}));
  TD_ASSIGN_OR_RETURN(r.k, op("unsqueeze", {k}, {{"dim", int64_t{-3}}}));
  TD_ASSIGN_OR_RETURN(r.v, op("unsqueeze", {v}, {{"dim", int64_t{-3}}}));
  if (r.has_mask) {
    // The scores' shape: the batch dims with the query's heads, [L, S].
    auto batch = [hq](const Tensor& t) {
      Shape b(t.shape().begin(), t.shape().end() - 2);
      b.back() = hq;
      return b;
    };
    TD_ASSIGN_OR_RETURN(Shape full, BroadcastShapes(batch(q), batch(k)));
    TD_ASSIGN_OR_RETURN(full, BroadcastShapes(full, batch(v)));
    full.push_back(l);
    full.push_back(s);
    TD_ASSIGN_OR_RETURN(r.mask, op("expand", {r.mask},
                                   {{"size", Ints(full.begin(), full.end())}}));
    Ints ms(full.begin(), full.end() - 3);
    for (int64_t n : {hk, hq / hk, l, s}) ms.push_back(n);
    TD_ASSIGN_OR_RETURN(r.mask, op("reshape", {r.mask}, {{"shape", ms}}));
  }
  return r;
}

}  // namespace

absl::StatusOr<Tensor> AttentionWeights(const Tensor& q, const Tensor& k,
                                        const Tensor* mask, bool causal,
                                        double scale, const OpContext& ctx) {
  const ComposeOps op{ctx};
  TD_ASSIGN_OR_RETURN(
      Tensor kt,
      op("transpose", {k}, {{"dim0", int64_t{-2}}, {"dim1", int64_t{-1}}}));
  TD_ASSIGN_OR_RETURN(Tensor s, op("matmul", {q, kt}));
  TD_ASSIGN_OR_RETURN(Tensor sc, op.Num(scale, s));
  TD_ASSIGN_OR_RETURN(s, op("mul", {s, sc}));
  if (causal) {
    const int64_t l = q.shape()[q.ndim() - 2], n = k.shape()[k.ndim() - 2];
    TD_ASSIGN_OR_RETURN(Tensor ones, op("ones", {},
                                        {{"shape", Ints{l, n}},
                                         {"dtype", DType::kBool},
                                         {"device", q.device()->name()}}));
    TD_ASSIGN_OR_RETURN(Tensor keep, op("tril", {ones}));
    TD_ASSIGN_OR_RETURN(Tensor blocked, op("logical_not", {keep}));
    TD_ASSIGN_OR_RETURN(s, MaskedOut(s, blocked, op));
  }
  if (mask != nullptr && mask->dtype() == DType::kBool) {
    TD_ASSIGN_OR_RETURN(Tensor blocked, op("logical_not", {*mask}));
    TD_ASSIGN_OR_RETURN(s, MaskedOut(s, blocked, op));
  } else if (mask != nullptr) {
    TD_ASSIGN_OR_RETURN(s, op("add", {s, *mask}));
  }
  return op("softmax", {s}, {{"dim", int64_t{-1}}});
}

absl::StatusOr<std::vector<Tensor>> ScaledDotProductAttention(
    absl::Span<const Tensor> in, const Attrs& attrs, const OpContext& ctx) {
  const ComposeOps op{ctx};
  const bool causal = attrs.Bool("is_causal");
  const Tensor* mask = in.size() > 3 ? &in[3] : nullptr;
  const char* name = "scaled_dot_product_attention";
  Grouped g{in[0], in[1], in[2], mask ? *mask : Tensor(), mask != nullptr};
  if (attrs.Bool("enable_gqa")) {
    TD_ASSIGN_OR_RETURN(g, Group(in, op));  // checked as grouped below
  }
  const Tensor* gm = g.has_mask ? &g.mask : nullptr;
  TD_ASSIGN_OR_RETURN(AttentionDims d,
                      CheckAttention(g.q, g.k, g.v, gm, causal, name));
  const double scale = AttentionScale(attrs, d.e);
  const bool mask_grad = gm != nullptr && gm->dtype() != DType::kBool &&
                         ctx.recorder != nullptr && gm->requires_grad();
  Tensor y;
  if (in[0].device()->kind() == DeviceKind::kCpu && !mask_grad) {
    std::vector<Tensor> ins = {g.q, g.k, g.v};
    if (gm != nullptr) ins.push_back(*gm);
    TD_ASSIGN_OR_RETURN(
        std::vector<Tensor> outs,
        CallOp("scaled_dot_product_flash_attention", std::move(ins),
               {{"is_causal", causal}, {"scale", scale}}, ctx));
    y = outs[0];
  } else {
    TD_ASSIGN_OR_RETURN(Tensor w,
                        AttentionWeights(g.q, g.k, gm, causal, scale, ctx));
    TD_ASSIGN_OR_RETURN(y, op("matmul", {w, g.v}));
  }
  if (g.q.ndim() != in[0].ndim()) {  // grouped: back to the query's heads
    Ints ys(y.shape().begin(), y.shape().end() - 4);
    const int64_t heads = in[0].shape()[in[0].ndim() - 3];
    for (int64_t s : {heads, d.l, d.ev}) ys.push_back(s);
    TD_ASSIGN_OR_RETURN(y, op("reshape", {y}, {{"shape", ys}}));
  }
  return std::vector<Tensor>{y};
}

namespace {

// scaled_dot_product_flash_attention recorded: P = softmax(scores)
// recomputed from the saved query, key and mask (composed, so recorded),
// dv = P^T dy, dS = P (dy v^T - rowsum(P dy v^T)), dq = scale dS k,
// dk = scale dS^T q.
Grads AttentionGradRecorded(GradCtx& g) {
  Grads r(g.num_inputs());
  GradValue q = g.in(0), k = g.in(1), v = g.in(2), dy = g.grad();
  GradValue mask = g.num_inputs() > 3 ? g.in(3) : GradValue();
  for (const GradValue* x : {&q, &k, &mask}) {
    if (x->value().ok()) continue;
    for (int i = 0; i < 3; ++i) r[i] = *x;  // the saved value's error
    return r;
  }
  const double scale = AttentionScale(g.attrs(), g.in_shape(0).back());
  GradValue p(AttentionWeights(*q.value(), *k.value(),
                               mask.empty() ? nullptr : &*mask.value(),
                               g.attrs().Bool("is_causal"), scale, g.op_ctx()),
              &g);
  auto t = [&](const GradValue& x) {
    return g.Op("transpose", {x},
                {{"dim0", int64_t{-2}}, {"dim1", int64_t{-1}}});
  };
  GradValue dp = g.Op("matmul", {dy, t(v)});
  GradValue ds =
      p * (dp - g.Op("sum", {dp * p}, {{"dim", Ints{-1}}, {"keepdim", true}}));
  if (g.needs(0)) r[0] = g.Op("matmul", {ds, k}) * scale;
  if (g.needs(1)) r[1] = g.Op("matmul", {t(ds), q}) * scale;
  if (g.needs(2)) r[2] = g.Op("matmul", {t(p), dy});
  return r;
}

// scaled_dot_product_flash_attention: the query's, key's and value's
// gradients in one fused row from the saved inputs, output and log-sum-exp
// (kernels/cpu/attention.h; recorded, the composite above). The mask gets
// none (the composite row composes a float mask that requires grad); the
// log-sum-exp's own gradient is not propagated.
Grads AttentionGrad(GradCtx& g) {
  Grads r(g.num_inputs());
  if (g.num_inputs() > 3 && g.needs(3)) {
    r[3] = GradValue(
        NotDifferentiable("scaled_dot_product_flash_attention", "attn_mask", 3),
        &g);
    return r;
  }
  // Recorded (create_graph): Note [Second-order fused rows].
  if (g.op_ctx().recorder != nullptr) return AttentionGradRecorded(g);
  std::vector<GradValue> in = {g.grad(), g.in(0),  g.in(1),
                               g.in(2),  g.out(0), g.out(1)};
  if (g.num_inputs() > 3) in.push_back(g.in(3));
  const double scale = AttentionScale(g.attrs(), g.in_shape(0).back());
  std::vector<GradValue> d =
      g.Ops("scaled_dot_product_flash_attention_backward", std::move(in),
            {{"is_causal", g.attrs().Bool("is_causal")}, {"scale", scale}});
  for (int i = 0; i < 3; ++i) {
    if (g.needs(i)) r[i] = d[i];
  }
  return r;
}

}  // namespace

std::vector<GradRow> AttentionGrads() {
  return {{"scaled_dot_product_flash_attention",
           {0, 1, 2, 3},
           {0, 1},
           AttentionGrad}};
}

}  // namespace tensord

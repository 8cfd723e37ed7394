// Backward formulas of softmax, linear, conv and norm rows (derivatives.h;
// the pooling rows' in derivatives_pool.cc).
// The losses, norms, dropout, addmm, stack and embedding are composite rows
// differentiated through the rows they call (Note [Recording]).
#include "runtime/device.h"
#include "runtime/ops/derivatives.h"
#include "runtime/ops/op_helpers.h"

namespace tensord {
namespace {

GradValue G(GradCtx& g) { return g.grad(); }

std::map<std::string, AttrValue> ConvAttrs(GradCtx& g, const char* size_name,
                                           const Shape& size) {
  return {{size_name, Ints(size.begin(), size.end())},
          {"stride", g.attrs().Ints("stride")},
          {"padding", g.attrs().Ints("padding")},
          {"dilation", g.attrs().Ints("dilation")},
          {"groups", g.attrs().Int("groups")}};
}

// conv2d (kRank 2) and conv3d (3): the rows' gradient ops, the bias
// gradient a sum over all but the channels.
template <int kRank>
Grads ConvGrad(GradCtx& g) {
  const bool three = kRank == 3;
  Grads r(g.num_inputs());
  if (g.needs(0)) {
    r[0] = g.Op(three ? "conv3d_backward_input" : "conv2d_backward_input",
                {G(g), g.in(1)}, ConvAttrs(g, "input_size", g.in_shape(0)));
  }
  if (g.needs(1)) {
    r[1] = g.Op(three ? "conv3d_backward_weight" : "conv2d_backward_weight",
                {G(g), g.in(0)}, ConvAttrs(g, "weight_size", g.in_shape(1)));
  }
  if (g.num_inputs() == 3 && g.needs(2)) {
    r[2] = g.Op("sum", {G(g)},
                {{"dim", three ? Ints{0, 2, 3, 4} : Ints{0, 2, 3}}});
  }
  return r;
}

// linear(x [..., K], w [N, K] or [K], b?) (Note [Fused linear]): one node
// whatever path the forward took. The weight's gradient is one [N, M] x
// [M, K] product over x's rows flattened, contiguous as AccumulateGrad wants
// it; the bias's is the output gradient, summed to its shape by Apply.
Grads LinearGrad(GradCtx& g) {
  Grads r(g.num_inputs());
  const bool vector_w = g.in_shape(1).size() == 1;
  const int64_t k = g.in_shape(0).back();
  GradValue gy = G(g);
  if (g.needs(0)) {
    r[0] = vector_w ? g.Op("unsqueeze", {gy}, {{"dim", int64_t{-1}}}) * g.in(1)
                    : g.Op("matmul", {gy, g.in(1)});
  }
  if (g.needs(1)) {
    GradValue x2 = g.Op("reshape", {g.in(0)}, {{"shape", Ints{-1, k}}});
    if (vector_w) {
      r[1] = g.Op("matmul", {g.Op("reshape", {gy}, {{"shape", Ints{-1}}}), x2});
    } else {
      const int64_t n = g.in_shape(1)[0];
      GradValue g2 = g.Op("reshape", {gy}, {{"shape", Ints{-1, n}}});
      r[1] = g.Op("matmul", {g.Op("t", {g2}), x2});
    }
  }
  if (g.num_inputs() == 3 && g.needs(2)) r[2] = gy;
  return r;
}

// y = conv_transpose2d(x, w) is conv2d's input gradient of x: dx = conv2d(dy,
// w); dw = conv2d's weight gradient with x as the output gradient and dy as
// the image.
Grads ConvTransposeGrad(GradCtx& g) {
  Grads r(g.num_inputs());
  std::map<std::string, AttrValue> geo = {
      {"stride", g.attrs().Ints("stride")},
      {"padding", g.attrs().Ints("padding")},
      {"dilation", g.attrs().Ints("dilation")},
      {"groups", g.attrs().Int("groups")}};
  if (g.needs(0)) {  // output_padding >= stride: conv2d gives more rows
    r[0] = g.Op("conv2d", {G(g), g.in(1)}, geo);
    for (int64_t d : {2, 3}) {
      r[0] = g.Op(
          "narrow", {r[0]},
          {{"dim", d}, {"start", int64_t{0}}, {"length", g.in_shape(0)[d]}});
    }
  }
  if (g.needs(1)) {
    const Shape& w = g.in_shape(1);
    geo["weight_size"] = Ints(w.begin(), w.end());
    r[1] = g.Op("conv2d_backward_weight", {g.in(0), G(g)}, geo);
  }
  if (g.num_inputs() == 3 && g.needs(2)) {
    r[2] = g.Op("sum", {G(g)}, {{"dim", Ints{0, 2, 3}}});
  }
  return r;
}

// native_batch_norm: one fused backward row for the input, weight and bias
// (kernels/cpu/batch_norm.h), from the saved input, mean and var.
Grads BatchNormGrad(GradCtx& g) {
  std::vector<GradValue> in = {G(g), g.in(0), g.out(1), g.out(2)};
  if (g.num_inputs() > 1) in.push_back(g.in(1));
  std::vector<GradValue> d = g.Ops("native_batch_norm_backward", std::move(in),
                                   {{"eps", g.attrs().Float("eps")}});
  Grads r(g.num_inputs());
  for (int i = 0; i < g.num_inputs(); ++i) {
    if (g.needs(i)) r[i] = d[i];
  }
  return r;
}

// Note [Second-order fused rows]: the fused backward rows
// (native_layer_norm_backward, fused_cross_entropy_backward, gelu_backward)
// have no gradients of their own. When a backward pass is itself recorded
// (create_graph: g.op_ctx().recorder is set) the formulas below give the same
// gradients as differentiable rows over the saved inputs instead, with the
// forward's statistics recomputed from them so that their dependence on the
// input is recorded too (PyTorch's native_layer_norm switches to
// infinitely_differentiable_native_layer_norm_backward the same way).
bool Recorded(GradCtx& g) { return g.op_ctx().recorder != nullptr; }

// softmax and log_softmax: one fused row each on the CPU (Note [CPU softmax]
// in kernels/cpu/softmax.h; PyTorch's _softmax_backward_data); recorded, on
// other devices, or for a gradient not of the output's dtype, the
// composition below.
bool FusedSoftmaxGrad(GradCtx& g, const GradValue& dy, const GradValue& y) {
  if (Recorded(g) || !dy.value().ok() || !y.value().ok()) return false;
  const Tensor &d = *dy.value(), &out = *y.value();
  return out.device()->kind() == DeviceKind::kCpu &&
         d.device() == out.device() && d.dtype() == out.dtype() &&
         d.shape() == out.shape();
}

Grads SoftmaxGrad(GradCtx& g) {
  GradValue y = g.out(), dy = G(g);
  const int64_t d = g.attrs().Int("dim");
  if (FusedSoftmaxGrad(g, dy, y)) {
    return {g.Op("softmax_backward", {dy, y}, {{"dim", d}})};
  }
  GradValue gy = dy * y;
  return {gy - y * g.Op("sum", {gy}, {{"dim", Ints{d}}, {"keepdim", true}})};
}

Grads LogSoftmaxGrad(GradCtx& g) {
  GradValue y = g.out(), dy = G(g);
  const int64_t d = g.attrs().Int("dim");
  if (FusedSoftmaxGrad(g, dy, y)) {
    return {g.Op("log_softmax_backward", {dy, y}, {{"dim", d}})};
  }
  GradValue s = g.Op("sum", {dy}, {{"dim", Ints{d}}, {"keepdim", true}});
  return {dy - g.Op("exp", {y}) * s};
}

// native_layer_norm recorded: xhat = (x - mean) * rstd over the normalized
// dims, gxhat = dy * weight, dx = rstd * (gxhat - mean(gxhat) - xhat *
// mean(gxhat * xhat)), dweight = sum(dy * xhat), dbias = sum(dy).
Grads LayerNormGradRecorded(GradCtx& g) {
  const int nd = static_cast<int>(g.in_shape(0).size());
  const int k = static_cast<int>(g.attrs().Ints("normalized_shape").size());
  Ints dims;
  for (int d = nd - k; d < nd; ++d) dims.push_back(d);
  auto mean = [&](const GradValue& v) {
    return g.Op("mean", {v}, {{"dim", dims}, {"keepdim", true}});
  };
  GradValue x = g.in(0), dy = G(g);
  GradValue xc = x - mean(x);
  GradValue rstd = g.Op("rsqrt", {mean(xc * xc) + g.attrs().Float("eps")});
  GradValue xhat = xc * rstd;
  GradValue gxhat = g.num_inputs() > 1 ? dy * g.in(1) : dy;
  Grads r(g.num_inputs());
  if (g.needs(0)) {
    r[0] = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat));
  }
  if (g.num_inputs() > 1 && g.needs(1)) r[1] = dy * xhat;  // summed by Apply
  if (g.num_inputs() > 2 && g.needs(2)) r[2] = dy;
  return r;
}

// native_layer_norm: one fused backward row for the input, weight and bias
// (kernels/cpu/layer_norm.h), from the saved input, weight, mean and rstd;
// recorded, the composite above (Note [Second-order fused rows]).
Grads LayerNormGrad(GradCtx& g) {
  if (Recorded(g)) return LayerNormGradRecorded(g);
  std::vector<GradValue> in = {G(g), g.in(0), g.out(1), g.out(2)};
  if (g.num_inputs() > 1) in.push_back(g.in(1));
  std::vector<GradValue> d =
      g.Ops("native_layer_norm_backward", std::move(in),
            {{"normalized_shape", g.attrs().Ints("normalized_shape")}});
  Grads r(g.num_inputs());
  for (int i = 0; i < g.num_inputs(); ++i) {
    if (g.needs(i)) r[i] = d[i];
  }
  return r;
}

// fused_cross_entropy recorded (kernels/cpu/cross_entropy.cc's formula):
// dx = a (p (c + e / C v W) - c [class == t] - e / C v w) with p =
// softmax(x) (no p term for log_probs), v = (t != ignore_index), c = (1 - e)
// v w_t, W = sum w, and a the output's gradient (over the total weight
// sum v w_t for "mean"), each per-position value broadcast over the classes.
GradValue CrossEntropyInputGradRecorded(GradCtx& g) {
  const Shape& xs = g.in_shape(0);
  const int64_t cdim = xs.size() == 1 ? 0 : 1, classes = xs[cdim];
  const double e = g.attrs().Float("label_smoothing");
  const bool weighted = g.num_inputs() > 2;
  GradValue t = g.in(1);
  if (!t.value().ok()) return t;
  const std::string device = t.value()->device()->name();
  GradValue v = g.Op(
      "ne", {t, g.Num(static_cast<double>(g.attrs().Int("ignore_index")), t)});
  GradValue safe = g.Op("where", {v, t, g.Num(0, t)});
  GradValue vf = g.Op("to", {v}, {{"dtype", g.in_dtype(0)}});
  GradValue wt = vf;
  if (weighted) {
    const Shape& ts = g.in_shape(1);
    GradValue flat = g.Op("reshape", {safe}, {{"shape", Ints{-1}}});
    GradValue picked =
        g.Op("index_select", {g.in(2), flat}, {{"dim", int64_t{0}}});
    wt =
        vf * g.Op("reshape", {picked}, {{"shape", Ints(ts.begin(), ts.end())}});
  }
  GradValue a = G(g);
  if (g.attrs().String("reduction") == "mean") a = a / g.Op("sum", {wt});
  auto col = [&](const GradValue& p) {  // per position -> over classes
    return g.Op("unsqueeze", {p}, {{"dim", cdim}});
  };
  if (g.attrs().String("reduction") == "none") a = col(a);
  Ints cshape(xs.size() - cdim, 1);
  cshape[0] = classes;
  GradValue cls = g.Op("reshape",
                       {g.Op("arange", {},
                             {{"end", static_cast<double>(classes)},
                              {"dtype", DType::kInt64},
                              {"device", device}})},
                       {{"shape", cshape}});
  GradValue onehot =
      g.Op("to", {g.Op("eq", {cls, col(safe)})}, {{"dtype", g.in_dtype(0)}});
  GradValue c = wt * (1 - e);
  // log_probs (nll_loss): the input is logp itself, p has no term.
  const bool log_probs = g.attrs().Bool("log_probs");
  GradValue p =
      log_probs ? GradValue() : g.Op("softmax", {g.in(0)}, {{"dim", cdim}});
  GradValue d = -(onehot * col(c));
  if (!log_probs) d = d + p * col(c);
  if (e > 0) {
    const double ec = e / static_cast<double>(classes);
    GradValue smooth = col(vf) * ec;
    d = d - (weighted ? smooth * g.Op("reshape", {g.in(2)}, {{"shape", cshape}})
                      : smooth);
    if (!log_probs) {
      GradValue w_sum = weighted ? g.Op("sum", {g.in(2)}) : g.Num(classes, vf);
      d = d + p * col(vf * w_sum * ec);
    }
  }
  return a * d;
}

// fused_cross_entropy: the logits' gradient in one row from the saved
// logits, target, weight, log-sum-exp and total weight (recorded: the
// composite above); the target gets none and the class weights cannot have
// one (PyTorch: not differentiable with respect to 'weight').
Grads CrossEntropyGrad(GradCtx& g) {
  Grads r(g.num_inputs());
  if (g.num_inputs() > 2 && g.needs(2)) {
    r[2] = GradValue(NotDifferentiable("fused_cross_entropy", "weight", 2), &g);
    return r;
  }
  if (Recorded(g)) {
    r[0] = CrossEntropyInputGradRecorded(g);
    return r;
  }
  std::vector<GradValue> in = {G(g), g.in(0), g.in(1), g.out(1), g.out(2)};
  if (g.num_inputs() > 2) in.push_back(g.in(2));
  r[0] = g.Op("fused_cross_entropy_backward", std::move(in),
              {{"reduction", g.attrs().String("reduction")},
               {"ignore_index", g.attrs().Int("ignore_index")},
               {"label_smoothing", g.attrs().Float("label_smoothing")},
               {"log_probs", g.attrs().Bool("log_probs")}});
  return r;
}

}  // namespace

std::vector<GradRow> NnGrads() {
  return {
      {"softmax", {}, {0}, SoftmaxGrad},
      {"log_softmax", {}, {0}, LogSoftmaxGrad},
      {"linear", {0, 1}, {}, LinearGrad},
      {"conv2d", {0, 1}, {}, ConvGrad<2>},
      {"conv3d", {0, 1}, {}, ConvGrad<3>},
      {"native_batch_norm", {0, 1}, {1, 2}, BatchNormGrad},
      {"native_layer_norm", {0, 1}, {1, 2}, LayerNormGrad},
      {"fused_cross_entropy", {0, 1, 2}, {1, 2}, CrossEntropyGrad},
      {"conv_transpose2d", {0, 1}, {}, ConvTransposeGrad},
  };
}

}  // namespace tensord

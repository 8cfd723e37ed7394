// Backward formulas of softmax, conv and pooling rows (derivatives.h). The
// losses, norms, dropout, linear/addmm, stack and embedding are composite
// rows differentiated through the rows they call (Note [Recording]).
#include "runtime/ops/derivatives.h"

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

Grads ConvGrad(GradCtx& g) {
  Grads r(g.num_inputs());
  if (g.needs(0)) {
    r[0] = g.Op("conv2d_backward_input", {G(g), g.in(1)},
                ConvAttrs(g, "input_size", g.in_shape(0)));
  }
  if (g.needs(1)) {
    r[1] = g.Op("conv2d_backward_weight", {G(g), g.in(0)},
                ConvAttrs(g, "weight_size", g.in_shape(1)));
  }
  if (g.num_inputs() == 3 && g.needs(2)) {
    r[2] = g.Op("sum", {G(g)}, {{"dim", Ints{0, 2, 3}}});
  }
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

// native_layer_norm: one fused backward row for the input, weight and bias
// (kernels/cpu/layer_norm.h), from the saved input, weight, mean and rstd.
Grads LayerNormGrad(GradCtx& g) {
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

// fused_cross_entropy: the logits' gradient in one row from the saved
// logits, target, weight, log-sum-exp and total weight; the target and the
// class weights get none (PyTorch does not differentiate the weight).
Grads CrossEntropyGrad(GradCtx& g) {
  std::vector<GradValue> in = {G(g), g.in(0), g.in(1), g.out(1), g.out(2)};
  if (g.num_inputs() > 2) in.push_back(g.in(2));
  Grads r(g.num_inputs());
  r[0] = g.Op("fused_cross_entropy_backward", std::move(in),
              {{"reduction", g.attrs().String("reduction")},
               {"ignore_index", g.attrs().Int("ignore_index")},
               {"label_smoothing", g.attrs().Float("label_smoothing")}});
  return r;
}

std::map<std::string, AttrValue> SameAttrs(GradCtx& g,
                                           std::vector<const char*> names) {
  std::map<std::string, AttrValue> a;
  for (const char* n : names) {
    if (std::string(n) == "ceil_mode" || std::string(n) == "count_include_pad")
      a[n] = g.attrs().Bool(n);
    else
      a[n] = g.attrs().Ints(n);
  }
  return a;
}

}  // namespace

std::vector<GradRow> NnGrads() {
  return {
      {"softmax",
       {},
       {0},
       [](GradCtx& g) -> Grads {
         GradValue y = g.out(), gy = G(g) * y;
         const int64_t d = g.attrs().Int("dim");
         return {gy -
                 y * g.Op("sum", {gy}, {{"dim", Ints{d}}, {"keepdim", true}})};
       }},
      {"log_softmax",
       {},
       {0},
       [](GradCtx& g) -> Grads {
         const int64_t d = g.attrs().Int("dim");
         GradValue s =
             g.Op("sum", {G(g)}, {{"dim", Ints{d}}, {"keepdim", true}});
         return {G(g) - g.Op("exp", {g.out()}) * s};
       }},
      {"conv2d", {0, 1}, {}, ConvGrad},
      {"native_batch_norm", {0, 1}, {1, 2}, BatchNormGrad},
      {"native_layer_norm", {0, 1}, {1, 2}, LayerNormGrad},
      {"fused_cross_entropy", {0, 1, 2}, {1, 2}, CrossEntropyGrad},
      {"conv_transpose2d", {0, 1}, {}, ConvTransposeGrad},
      // The output holds the window maxima, so the backward does not
      // recompute them; modified in place since (relu_ after the pool), it
      // is left out and they are (optional_outputs).
      {"max_pool2d",
       {0},
       {0},
       [](GradCtx& g) -> Grads {
         std::vector<GradValue> in = {G(g), g.in(0)};
         if (g.has_out(0)) in.push_back(g.out());
         return {g.Op("max_pool2d_backward", std::move(in),
                      SameAttrs(g, {"kernel_size", "stride", "padding",
                                    "dilation", "ceil_mode"}))};
       },
       /*optional_outputs=*/true},
      {"avg_pool2d",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {g.Op("avg_pool2d_backward", {G(g), g.in(0)},
                      SameAttrs(g, {"kernel_size", "stride", "padding",
                                    "ceil_mode", "count_include_pad"}))};
       }},
      {"adaptive_avg_pool2d",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {g.Op("adaptive_avg_pool2d_backward", {G(g), g.in(0)})};
       }},
  };
}

}  // namespace tensord

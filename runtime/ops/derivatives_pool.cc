// Backward formulas of the pooling rows (derivatives.h): each is its
// backward row, at the saved indices where the forward keeps them.
#include <map>
#include <string>
#include <vector>

#include "runtime/ops/derivatives.h"

namespace tensord {
namespace {

GradValue G(GradCtx& g) { return g.grad(); }

std::map<std::string, AttrValue> SameAttrs(GradCtx& g,
                                           std::vector<const char*> names) {
  std::map<std::string, AttrValue> a;
  for (const char* n : names) {
    if (std::string(n) == "ceil_mode" || std::string(n) == "count_include_pad")
      a[n] = g.attrs().Bool(n);
    else if (std::string(n) == "divisor_override")
      a[n] = g.attrs().Int(n);
    else
      a[n] = g.attrs().Ints(n);
  }
  return a;
}

// derivatives.yaml's max_pool2d_with_indices: self's gradient is the
// backward row at the saved indices; the indices have none.
Grads MaxPoolWithIndicesGrad(GradCtx& g) {
  return {g.Op("max_pool2d_with_indices_backward", {G(g), g.in(0), g.out(1)},
               SameAttrs(g, {"kernel_size", "stride", "padding", "dilation",
                             "ceil_mode"}))};
}

// derivatives.yaml's adaptive_max_pool{2,3}d: as max_pool2d_with_indices',
// the backward row at the saved indices.
template <int kSpatial>
Grads AdaptiveMaxPoolGrad(GradCtx& g) {
  return {g.Op(kSpatial == 2 ? "adaptive_max_pool2d_backward"
                             : "adaptive_max_pool3d_backward",
               {G(g), g.in(0), g.out(1)})};
}

// derivatives.yaml's max_pool2d_with_indices_backward (the second order;
// adaptive_max_pool{2,3}d_backward's and max_pool3d_with_indices_backward's
// the same with kSpatial pooled dims): grad_output's gradient is
// max_pool_double_backward, the gradient gathered at the indices (an index
// outside the plane, which the row skipped, is a gather error); self's is
// zeros (zeros_like(self)), the indices' none.
template <int kSpatial>
Grads MaxPoolWithIndicesBackwardGrad(GradCtx& g) {
  Grads r(g.num_inputs());
  if (g.needs(0)) {
    const Shape& pooled = g.in_shape(0);
    const std::map<std::string, AttrValue> planes = {
        {"start_dim", int64_t{-kSpatial}}};
    GradValue flat = g.Op("flatten", {G(g)}, planes);
    GradValue at = g.Op("flatten", {g.in(2)}, planes);
    r[0] = g.Op("reshape", {g.Op("gather", {flat, at}, {{"dim", int64_t{-1}}})},
                {{"shape", Ints(pooled.begin(), pooled.end())}});
  }
  if (g.needs(1)) r[1] = g.ZerosOfInput(1);
  return r;
}

}  // namespace

std::vector<GradRow> PoolGrads() {
  return {
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
      {"max_pool2d_with_indices", {0}, {1}, MaxPoolWithIndicesGrad},
      {"max_pool2d_with_indices_backward",
       {2},
       {},
       MaxPoolWithIndicesBackwardGrad<2>},
      {"adaptive_max_pool2d", {0}, {1}, AdaptiveMaxPoolGrad<2>},
      {"adaptive_max_pool3d", {0}, {1}, AdaptiveMaxPoolGrad<3>},
      {"adaptive_max_pool2d_backward",
       {2},
       {},
       MaxPoolWithIndicesBackwardGrad<2>},
      {"adaptive_max_pool3d_backward",
       {2},
       {},
       MaxPoolWithIndicesBackwardGrad<3>},
      {"max_pool3d_with_indices_backward",
       {2},
       {},
       MaxPoolWithIndicesBackwardGrad<3>},
      {"avg_pool2d",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {
             g.Op("avg_pool2d_backward", {G(g), g.in(0)},
                  SameAttrs(g, {"kernel_size", "stride", "padding", "ceil_mode",
                                "count_include_pad", "divisor_override"}))};
       }},
      {"adaptive_avg_pool2d",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {g.Op("adaptive_avg_pool2d_backward", {G(g), g.in(0)})};
       }},
      {"avg_pool3d",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {
             g.Op("avg_pool3d_backward", {G(g), g.in(0)},
                  SameAttrs(g, {"kernel_size", "stride", "padding", "ceil_mode",
                                "count_include_pad", "divisor_override"}))};
       }},
      {"adaptive_avg_pool3d",
       {0},
       {},
       [](GradCtx& g) -> Grads {
         return {g.Op("adaptive_avg_pool3d_backward", {G(g), g.in(0)})};
       }},
  };
}

}  // namespace tensord

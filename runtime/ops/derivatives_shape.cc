// Backward formulas of views, shape ops and indexing (derivatives.h).
#include <algorithm>

#include "runtime/ops/derivatives.h"

namespace tensord {
namespace {

GradValue G(GradCtx& g) { return g.grad(); }

Ints InShape(GradCtx& g, int i = 0) {
  return Ints(g.in_shape(i).begin(), g.in_shape(i).end());
}

int64_t Wrap(int64_t d, int64_t n) { return d < 0 ? d + n : d; }

Grads ReshapeBack(GradCtx& g) {
  return {g.Op("reshape", {G(g)}, {{"shape", InShape(g)}})};
}

// Zeros of input 0's shape with `v` added at positions start, start+step,
// ... along dim (the gradient of narrow/select/slice), via scatter_add so it
// runs wherever the ops run.
GradValue SliceScatter(GradCtx& g, const GradValue& v, int64_t dim,
                       int64_t start, int64_t step) {
  if (!v.value().ok()) return v;
  const Shape& s = v.value()->shape();
  const int64_t len = s[dim];
  Ints idx_shape(s.size(), 1);
  idx_shape[dim] = len;
  GradValue idx = g.Op("arange", {},
                       {{"start", static_cast<double>(start)},
                        {"end", static_cast<double>(start + len * step)},
                        {"step", static_cast<double>(step)},
                        {"dtype", DType::kInt64},
                        {"device", v.value()->device()->name()}});
  idx = g.Op("reshape", {idx}, {{"shape", idx_shape}});
  idx = g.Op("expand", {idx}, {{"size", Ints(s.begin(), s.end())}});
  idx = g.Op("contiguous", {idx});
  GradValue zeros = Cast(g, g.ZerosOfInput(0), v.value()->dtype());
  return g.Op("scatter_add", {zeros, idx, v}, {{"dim", dim}});
}

Grads SliceGrad(GradCtx& g) {
  const int64_t n = static_cast<int64_t>(g.in_shape(0).size());
  const int64_t d = Wrap(g.attrs().Int("dim"), n);
  const int64_t size = g.in_shape(0)[d];
  auto clampi = [&](int64_t v) {
    v = v < 0 ? v + size : v;
    return std::min(std::max<int64_t>(v, 0), size);
  };
  const int64_t start =
      g.attrs().Has("start") ? clampi(g.attrs().Int("start")) : 0;
  return {SliceScatter(g, G(g), d, start, g.attrs().Int("step"))};
}

Grads NarrowGrad(GradCtx& g) {
  const int64_t n = static_cast<int64_t>(g.in_shape(0).size());
  const int64_t d = Wrap(g.attrs().Int("dim"), n);
  const int64_t start = Wrap(g.attrs().Int("start"), g.in_shape(0)[d]);
  return {SliceScatter(g, G(g), d, start, 1)};
}

Grads SelectGrad(GradCtx& g) {
  const int64_t n = static_cast<int64_t>(g.in_shape(0).size());
  const int64_t d = Wrap(g.attrs().Int("dim"), n);
  const int64_t index = Wrap(g.attrs().Int("index"), g.in_shape(0)[d]);
  GradValue v = g.Op("unsqueeze", {G(g)}, {{"dim", d}});
  return {SliceScatter(g, v, d, index, 1)};
}

Grads PermuteGrad(GradCtx& g) {
  const Ints& dims = g.attrs().Ints("dims");
  const int64_t n = static_cast<int64_t>(dims.size());
  Ints inverse(n);
  for (int64_t i = 0; i < n; ++i) inverse[Wrap(dims[i], n)] = i;
  return {g.Op("permute", {G(g)}, {{"dims", inverse}})};
}

// The gradients of several outputs along dim, joined (split/chunk/unbind).
Grads JoinGrad(GradCtx& g, const char* op) {
  std::vector<GradValue> parts;
  for (int i = 0;; ++i) {
    GradValue p = g.grad(i);
    if (!p.value().ok()) break;
    parts.push_back(p);
  }
  return {g.Op(op, parts, {{"dim", g.attrs().Int("dim")}})};
}

Grads CatGrad(GradCtx& g) {
  Grads r;
  int64_t offset = 0;
  int64_t rank = 0;
  for (int i = 0; i < g.num_inputs(); ++i) {
    rank = std::max<int64_t>(rank, g.in_shape(i).size());
  }
  const int64_t d = Wrap(g.attrs().Int("dim"), rank);
  for (int i = 0; i < g.num_inputs(); ++i) {
    const Shape& s = g.in_shape(i);
    if (static_cast<int64_t>(s.size()) != rank) {  // legacy empty [0] input
      r.push_back(g.needs(i) ? g.ZerosOfInput(i) : GradValue());
      continue;
    }
    const int64_t len = s[d];
    r.push_back(g.needs(i)
                    ? g.Op("narrow", {G(g)},
                           {{"dim", d}, {"start", offset}, {"length", len}})
                    : GradValue());
    offset += len;
  }
  return r;
}

// index_select along dim: the gradient rows are added back at the indices.
Grads IndexSelectGrad(GradCtx& g) {
  GradValue gr = G(g);
  if (!gr.value().ok()) return {gr, GradValue()};
  const Shape& s = gr.value()->shape();
  const int64_t rank = static_cast<int64_t>(s.size());
  const int64_t d = rank == 0 ? 0 : Wrap(g.attrs().Int("dim"), rank);
  Ints idx_shape(rank, 1);
  if (rank > 0) idx_shape[d] = s[d];
  GradValue idx = g.Op("reshape", {g.in(1)}, {{"shape", idx_shape}});
  idx = g.Op("contiguous",
             {g.Op("expand", {idx}, {{"size", Ints(s.begin(), s.end())}})});
  GradValue zeros = Cast(g, g.ZerosOfInput(0), gr.value()->dtype());
  return {g.Op("scatter_add", {zeros, idx, gr}, {{"dim", d}}), GradValue()};
}

// sort: each value's gradient goes back to where it came from.
Grads SortGrad(GradCtx& g) {
  if (g.in_shape(0).empty()) return {G(g)};
  return {g.Op("scatter", {g.ZerosOfInput(0), g.out(1), G(g)},
               {{"dim", g.attrs().Int("dim")}})};
}

// cumsum: out_j sums x_i for i <= j, so x_i's gradient sums g_j for j >= i:
// a cumsum of the reversed gradient, reversed back.
Grads CumsumGrad(GradCtx& g) {
  if (g.in_shape(0).empty()) return {G(g)};
  const Ints dims = {g.attrs().Int("dim")};
  GradValue r = g.Op("flip", {G(g)}, {{"dims", dims}});
  r = g.Op("cumsum", {r}, {{"dim", g.attrs().Int("dim")}});
  return {g.Op("flip", {r}, {{"dims", dims}})};
}

}  // namespace

std::vector<GradRow> ShapeGrads() {
  auto same = [](GradCtx& g) -> Grads { return {G(g)}; };
  return {
      {"sort", {}, {1}, SortGrad},
      {"cumsum", {}, {}, CumsumGrad},
      {"flip",
       {},
       {},
       [](GradCtx& g) -> Grads {
         return {g.Op("flip", {G(g)}, {{"dims", g.attrs().Ints("dims")}})};
       }},
      {"reshape", {}, {}, ReshapeBack},
      {"view", {}, {}, ReshapeBack},
      {"flatten", {}, {}, ReshapeBack},
      {"squeeze", {}, {}, ReshapeBack},
      {"unsqueeze", {}, {}, ReshapeBack},
      {"transpose",
       {},
       {},
       [](GradCtx& g) -> Grads {
         return {g.Op("transpose", {G(g)},
                      {{"dim0", g.attrs().Int("dim0")},
                       {"dim1", g.attrs().Int("dim1")}})};
       }},
      {"t", {}, {}, [](GradCtx& g) -> Grads { return {g.Op("t", {G(g)})}; }},
      {"permute", {}, {}, PermuteGrad},
      {"expand", {}, {}, same},  // summed back by the engine
      {"narrow", {}, {}, NarrowGrad},
      {"select", {}, {}, SelectGrad},
      {"slice", {}, {}, SliceGrad},
      {"contiguous", {}, {}, same},
      {"clone", {}, {}, same},
      {"to", {}, {}, same},  // converted back by the engine
      {"unbind",
       {},
       {},
       [](GradCtx& g) -> Grads { return JoinGrad(g, "stack"); }},
      {"split", {}, {}, [](GradCtx& g) -> Grads { return JoinGrad(g, "cat"); }},
      {"chunk", {}, {}, [](GradCtx& g) -> Grads { return JoinGrad(g, "cat"); }},
      {"cat", {}, {}, CatGrad},
      {"index_select", {1}, {}, IndexSelectGrad},
      {"gather",
       {1},
       {},
       [](GradCtx& g) -> Grads {
         GradValue zeros = Cast(
             g, g.ZerosOfInput(0),
             g.grad().value().ok() ? g.grad().value()->dtype() : g.in_dtype(0));
         return {g.Op("scatter_add", {zeros, g.in(1), G(g)},
                      {{"dim", g.attrs().Int("dim")}}),
                 GradValue()};
       }},
      {"scatter",
       {1},
       {},
       [](GradCtx& g) -> Grads {
         const AttrValue dim = g.attrs().Int("dim");
         GradValue src_zero = Zero(g, G(g));
         return {g.needs(0) ? g.Op("scatter", {G(g), g.in(1), src_zero},
                                   {{"dim", dim}})
                            : GradValue(),
                 GradValue(),
                 g.needs(2) ? g.Op("gather", {G(g), g.in(1)}, {{"dim", dim}})
                            : GradValue()};
       }},
      {"scatter_add",
       {1},
       {},
       [](GradCtx& g) -> Grads {
         return {G(g), GradValue(),
                 g.needs(2) ? g.Op("gather", {G(g), g.in(1)},
                                   {{"dim", g.attrs().Int("dim")}})
                            : GradValue()};
       }},
  };
}

}  // namespace tensord

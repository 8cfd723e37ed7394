// Backward formulas of views, shape ops and indexing (derivatives.h).
#include <algorithm>
#include <string>
#include <utility>

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
// The index is expanded to the gradient's shape as a view: scatter_add makes
// it contiguous itself, except on the CPU's row path for dim 0 (an
// embedding's gradient: Note [Row scatter_add] in kernels/cpu/index.h).
Grads IndexSelectGrad(GradCtx& g) {
  GradValue gr = G(g);
  if (!gr.value().ok()) return {gr, GradValue()};
  const Shape& s = gr.value()->shape();
  const int64_t rank = static_cast<int64_t>(s.size());
  const int64_t d = rank == 0 ? 0 : Wrap(g.attrs().Int("dim"), rank);
  Ints idx_shape(rank, 1);
  if (rank > 0) idx_shape[d] = s[d];
  GradValue idx = g.Op("reshape", {g.in(1)}, {{"shape", idx_shape}});
  idx = g.Op("expand", {idx}, {{"size", Ints(s.begin(), s.end())}});
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

// cumprod: out_j = prod_{i<=j} x_i. Before a row's first zero (k < z),
// d out_j / d x_k = out_j / x_k, and every out_j with j >= z is zero, so x_k's
// gradient is the reversed cumsum of g * out over x_k. At the first zero
// (k = z), d out_j / d x_z (j >= z) is the product of the other factors: the
// cumprod of x with x_z replaced by one, so its gradient is the reversed
// cumsum of g times that. Past the first zero every out_j keeps x_z as a
// factor: zero. Exact at zeros, as PyTorch's cumprod_backward, and nothing
// is read back to find them.
Grads CumprodGrad(GradCtx& g) {
  if (g.in_shape(0).empty()) return {G(g)};
  const int64_t dim = g.attrs().Int("dim");
  auto reversed_cumsum = [&](const GradValue& v) {
    const Ints dims = {dim};
    GradValue r = g.Op("flip", {v}, {{"dims", dims}});
    r = g.Op("cumsum", {r}, {{"dim", dim}});
    return g.Op("flip", {r}, {{"dims", dims}});
  };
  // With a dtype argument the product ran in that dtype: so does this.
  const bool cast =
      g.attrs().Has("dtype") && g.attrs().GetDType("dtype") != g.in_dtype(0);
  GradValue out = g.out();
  GradValue x = g.in(0);
  if (cast) x = Cast(g, x, g.attrs().GetDType("dtype"));
  GradValue is_zero = Cmp(g, "eq", x, Zero(g, x));
  GradValue zeros_so_far =
      g.Op("cumsum", {is_zero}, {{"dim", dim}, {"dtype", DType::kInt64}});
  GradValue before = Cmp(g, "eq", zeros_so_far, Zero(g, zeros_so_far));
  GradValue first =
      g.Op("logical_and",
           {is_zero, Cmp(g, "eq", zeros_so_far, g.Num(1, zeros_so_far))});
  GradValue one = g.Num(1, x);
  GradValue zero = Zero(g, x);
  GradValue at_before = reversed_cumsum(G(g) * out) / Where(g, before, x, one);
  GradValue others = g.Op("cumprod", {Where(g, first, one, x)}, {{"dim", dim}});
  GradValue grad = Where(g, before, at_before, zero) +
                   Where(g, first, reversed_cumsum(G(g) * others), zero);
  if (cast) grad = Cast(g, grad, g.in_dtype(0));
  return {grad};
}

// Note [as_strided backward]: as PyTorch's as_strided_backward, the
// gradient goes through a zeroed buffer standing for the storage span both
// geometries cover: the output's gradient is added at the positions the
// output reads (scatter_add: overlapping outputs add up), the input's
// gradient is read back at the positions the input covers, divided by how
// often the input itself covers each position when it overlaps. Positions
// are computed on the device (arange per dim), nothing is read back.
struct Geometry {
  Shape size;
  Strides stride;
  int64_t offset;
};

int64_t Span(const Geometry& g, int64_t base) {  // elements from base
  int64_t last = g.offset - base;
  for (size_t d = 0; d < g.size.size(); ++d) {
    if (g.size[d] == 0) return 0;
    last += (g.size[d] - 1) * g.stride[d];
  }
  return last + 1;
}

// PyTorch's _maybe_overlapping_memory: some position is covered twice.
bool MayOverlap(const Geometry& g) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t d = 0; d < g.size.size(); ++d) {
    if (g.size[d] > 1) dims.push_back({g.stride[d], g.size[d]});
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) return true;
    reach += (size - 1) * stride;
  }
  return false;
}

// The flat positions (int64, [numel]) `geo` covers, counted from `base`.
GradValue Positions(GradCtx& g, const Geometry& geo, int64_t base,
                    const std::string& device) {
  const int64_t n = static_cast<int64_t>(geo.size.size());
  GradValue pos = g.Op("full", {},
                       {{"shape", Ints{}},
                        {"fill_value", static_cast<double>(geo.offset - base)},
                        {"dtype", DType::kInt64},
                        {"device", device}});
  for (int64_t d = 0; d < n; ++d) {
    if (geo.size[d] <= 1 || geo.stride[d] == 0) continue;
    Ints shape(n, 1);
    shape[d] = geo.size[d];
    GradValue a = g.Op("arange", {},
                       {{"end", static_cast<double>(geo.size[d])},
                        {"dtype", DType::kInt64},
                        {"device", device}});
    a = g.Op("reshape", {a}, {{"shape", shape}});
    pos = pos + a * static_cast<double>(geo.stride[d]);
  }
  pos =
      g.Op("expand", {pos}, {{"size", Ints(geo.size.begin(), geo.size.end())}});
  return g.Op("reshape", {g.Op("contiguous", {pos})}, {{"shape", Ints{-1}}});
}

Grads AsStridedGrad(GradCtx& g) {
  GradValue gr = G(g);
  if (!gr.value().ok() || !g.in(0).value().ok() || !g.out(0).value().ok()) {
    return {gr};
  }
  // Copies: value() returns the StatusOr by value, a reference would dangle.
  const Tensor in = *g.in(0).value();
  const Tensor out = *g.out(0).value();
  if (in.numel() == 0 || out.numel() == 0) return {g.ZerosOfInput(0)};
  const Geometry gi{in.shape(), in.strides(), in.offset()};
  const Geometry go{out.shape(), out.strides(), out.offset()};
  const int64_t base = std::min(gi.offset, go.offset);
  const int64_t span = std::max(Span(gi, base), Span(go, base));
  const std::string device = in.device()->name();
  const DType dtype = gr.value()->dtype();
  auto zeros = [&] {
    return g.Op("zeros", {},
                {{"shape", Ints{span}}, {"dtype", dtype}, {"device", device}});
  };
  GradValue flat =
      g.Op("reshape", {g.Op("contiguous", {gr})}, {{"shape", Ints{-1}}});
  GradValue buffer =
      g.Op("scatter_add", {zeros(), Positions(g, go, base, device), flat},
           {{"dim", int64_t{0}}});
  GradValue at = Positions(g, gi, base, device);
  GradValue r = g.Op("gather", {buffer, at}, {{"dim", int64_t{0}}});
  if (MayOverlap(gi)) {
    GradValue ones = g.Op(
        "ones", {},
        {{"shape", Ints{in.numel()}}, {"dtype", dtype}, {"device", device}});
    GradValue count =
        g.Op("scatter_add", {zeros(), at, ones}, {{"dim", int64_t{0}}});
    r = r / g.Op("gather", {count, at}, {{"dim", int64_t{0}}});
  }
  return {g.Op("reshape", {r}, {{"shape", InShape(g)}})};
}

}  // namespace

std::vector<GradRow> ShapeGrads() {
  auto same = [](GradCtx& g) -> Grads { return {G(g)}; };
  return {
      {"sort", {}, {1}, SortGrad},
      {"cumsum", {}, {}, CumsumGrad},
      {"cumprod", {0}, {0}, CumprodGrad},
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
      {"as_strided", {0}, {0}, AsStridedGrad},
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

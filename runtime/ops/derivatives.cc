#include "runtime/ops/derivatives.h"

#include "absl/strings/str_cat.h"
#include "runtime/core/check.h"

namespace tensord {

void AttachGradients(std::vector<OpDef>* table) {
  std::vector<GradRow> rows;
  for (auto family : {PointwiseGrads, ReductionGrads, ShapeGrads, NnGrads,
                      PoolGrads, MathGrads, DistanceGrads, AttentionGrads,
                      EmbeddingBagGrads, GridSample3dGrads, CtcLossGrads,
                      SegmentReduceGrads, MarginLossGrads, LinalgGrads,
                      UpsampleAaGrads, GroupNormGrads,
                      EmbeddingGrads}) {
    for (GradRow& r : family()) rows.push_back(std::move(r));
  }
  auto find = [&](const std::string& name) -> OpDef* {
    for (OpDef& def : *table) {
      if (def.name == name) return &def;
    }
    return nullptr;
  };
  for (const GradRow& r : rows) {
    OpDef* def = find(r.op);
    TD_CHECK(def != nullptr,
             absl::StrCat("gradient for unknown op ", r.op).c_str());
    def->backward = r.backward;
    def->save_inputs = r.save_inputs;
    def->save_outputs = r.save_outputs;
    def->optional_outputs = r.optional_outputs;
  }
  // In-place rows differentiate as their out-of-place twins (Note
  // [Recording] saves a copy of input 0's old value).
  for (OpDef& def : *table) {
    if (!def.inplace || def.backward != nullptr) continue;
    const OpDef* twin = find(def.name.substr(0, def.name.size() - 1));
    if (twin == nullptr) continue;
    def.backward = twin->backward;
    def.save_inputs = twin->save_inputs;
    def.save_outputs = twin->save_outputs;
    def.optional_outputs = twin->optional_outputs;
  }
}

GradValue Unreduce(GradCtx& g, const GradValue& v, bool int_dim) {
  const Shape& in = g.in_shape(0);
  const int rank = static_cast<int>(in.size());
  std::vector<bool> reduced(rank, rank > 0);
  bool all = true;
  if (int_dim ? g.attrs().Has("dim") : !g.attrs().Ints("dim").empty()) {
    all = false;
    reduced.assign(rank, false);
    std::vector<int64_t> dims = int_dim
                                    ? std::vector<int64_t>{g.attrs().Int("dim")}
                                    : g.attrs().Ints("dim");
    for (int64_t d : dims) {
      if (rank > 0) reduced[(d % rank + rank) % rank] = true;
    }
  }
  GradValue r = v;
  if (!g.attrs().Bool("keepdim") || all) {
    Ints keep;
    for (int i = 0; i < rank; ++i) keep.push_back(reduced[i] ? 1 : in[i]);
    r = g.Op("reshape", {r}, {{"shape", keep}});
  }
  return g.Op("expand", {r}, {{"size", Ints(in.begin(), in.end())}});
}

GradValue Where(GradCtx& g, const GradValue& cond, const GradValue& a,
                const GradValue& b) {
  return g.Op("where", {cond, a, b});
}

GradValue Cmp(GradCtx& g, const char* op, const GradValue& a,
              const GradValue& b) {
  return g.Op(op, {a, b});
}

GradValue Cast(GradCtx& g, const GradValue& v, DType dtype) {
  return g.Op("to", {v}, {{"dtype", dtype}});
}

}  // namespace tensord

#include "runtime/ops/op_table.h"

#include "absl/container/flat_hash_map.h"
#include "runtime/ops/cuda_kernels.h"
#include "runtime/ops/derivatives.h"

namespace tensord {

const std::vector<OpDef>& OpTable() {
  static const std::vector<OpDef>* table = [] {
    auto* t = new std::vector<OpDef>();
    for (auto family :
         {CreationOps,     UnaryOps,          PointwiseOps,     CompareOps,
          InPlaceOps,      ReductionOps,      LinalgOps,        ViewOps,
          ShapeOps,        IndexOps,          EmbeddingOps,     ScatterReduceOps,
          NnOps,
          ConvOps,         ConvGradOps,       MaxPoolOps,       AdaptiveMaxPoolOps,
          AvgPool3dOps,    BatchNormOps,      OptimOps,         SortOps,
          ScanOps,         SelectOps,         LossOps,          LayerNormOps,
          CrossEntropyOps, GeluOps,           StridedOps,       SpecialOps,
          LapackOps,       LapackSpectralOps, Conv3dOps,        GridSampleOps,
          DistanceOps,     AttentionOps,      LapackQrOps,      LapackMatrixOps,
          EmbeddingBagOps, MarginLossOps,     GridSample3dOps,  CtcLossOps,
          SegmentReduceOps, TrilinearOps,     UpsampleAaOps,
          HistogramddOps,  GroupNormOps}) {
      for (OpDef& def : family()) t->push_back(std::move(def));
    }
    AttachGradients(t);
    AttachCudaKernels(t);  // by name; none in a CPU-only build
    for (OpDef& def : *t) {
      auto defaults = Attrs::Build(def.name, def.attrs, {});
      if (defaults.ok()) {
        def.default_attrs = std::make_shared<const Attrs>(*std::move(defaults));
      }
    }
    return t;
  }();
  return *table;
}

const OpDef* FindOpInFamilies(const std::string& name) {
  static const std::vector<OpDef>* rows = [] {
    auto* r = new std::vector<OpDef>(UnaryOps());
    for (OpDef& def : PointwiseOps()) r->push_back(std::move(def));
    return r;
  }();
  for (const OpDef& def : *rows) {
    if (def.name == name) return &def;
  }
  return nullptr;
}

const OpDef* FindOp(absl::string_view name) {
  static const auto* index = [] {
    auto* m = new absl::flat_hash_map<std::string, const OpDef*>();
    for (const OpDef& def : OpTable()) (*m)[def.name] = &def;
    return m;
  }();
  auto it = index->find(name);
  return it == index->end() ? nullptr : it->second;
}

}  // namespace tensord

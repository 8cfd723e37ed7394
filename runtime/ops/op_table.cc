#include "runtime/ops/op_table.h"

#include "absl/container/flat_hash_map.h"

namespace tensord {

const std::vector<OpDef>& OpTable() {
  static const std::vector<OpDef>* table = [] {
    auto* t = new std::vector<OpDef>();
    for (auto family : {CreationOps, PointwiseOps, ReductionOps, LinalgOps,
                        ViewOps}) {
      for (OpDef& def : family()) t->push_back(std::move(def));
    }
    return t;
  }();
  return *table;
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

// What the view rows (view_ops.cc, slice_view_ops.cc) share: their row
// builder and one-view result. Private to the op table library.
#ifndef TENSORD_RUNTIME_OPS_VIEW_ROW_H_
#define TENSORD_RUNTIME_OPS_VIEW_ROW_H_

#include <map>
#include <string>
#include <vector>

#include "runtime/ops/op_def.h"
#include "runtime/ops/op_helpers.h"

namespace tensord {

inline absl::StatusOr<std::vector<Tensor>> One(Tensor t) {
  return absl::StatusOr<std::vector<Tensor>>(std::vector<Tensor>{std::move(t)});
}

inline OpDef ViewRow(std::string name, ViewFn fn, std::vector<AttrSpec> attrs,
                     std::string doc,
                     std::map<std::string, AttrValue> example) {
  OpDef def = MakeOp(std::move(name), 1, 1, std::move(attrs), std::move(doc));
  def.view = fn;
  def.native_half = true;
  def.examples = {Example({{2, 3, 4}}, std::move(example))};
  return def;
}

inline AttrSpec IntAttr(const char* name) {
  return Required(name, AttrType::kInt);
}
inline AttrSpec IntOr(const char* name, int64_t v) {
  return Optional(name, AttrType::kInt, v);
}

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_VIEW_ROW_H_

#include "server/graph_replay/handle_meta.h"

#include "absl/strings/str_cat.h"

namespace tensord {

void HandleTableMeta::AppendMeta(uint64_t id, std::string* out) const {
  auto entry = table_->Find(id);
  if (!entry.ok()) return out->push_back('?');  // fails eagerly: NOT_FOUND
  if ((*entry)->poisoned()) return out->push_back('!');
  if ((*entry)->is_none()) return out->push_back('0');
  const Tensor& t = (*entry)->tensor;
  // Text is plenty: this runs once per older handle a command names.
  absl::StrAppend(out, "t", static_cast<int>(t.dtype()), ":",
                  t.device()->name(), ":", t.requires_grad() ? 1 : 0, "[");
  for (int64_t d : t.shape()) absl::StrAppend(out, d, ",");
  out->push_back(']');
}

const void* HandleTableMeta::StorageOf(uint64_t id) const {
  auto entry = table_->Find(id);
  if (!entry.ok() || (*entry)->poisoned() || (*entry)->is_none()) {
    return nullptr;
  }
  const Tensor& t = (*entry)->tensor;
  return t.storage() == nullptr ? nullptr : t.storage()->data();
}

}  // namespace tensord

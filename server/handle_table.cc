#include "server/handle_table.h"

#include "absl/strings/str_cat.h"

namespace tensord {

absl::Status HandleTable::CheckNew(uint64_t id) const {
  if (id == 0) {
    return absl::InvalidArgumentError(
        "handle 0 is reserved; handles start at 1");
  }
  if (entries_.contains(id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("handle ", id, " is already in use in this session"));
  }
  if (id <= max_id_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "handle ", id, " is not above the last created handle ", max_id_,
        " (handles must strictly increase and are never reused)"));
  }
  if (entries_.size() >= kMaxSessionHandles) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "handle ", id, ": the session already holds ", entries_.size(),
        " handles, the most a session may hold; release some"));
  }
  absl::Status room = Reserve(1);
  if (!room.ok()) {
    return absl::Status(room.code(),
                        absl::StrCat("handle ", id, ": ", room.message()));
  }
  return absl::OkStatus();
}

absl::Status HandleTable::Reserve(size_t n) const {
  if (entries_.size() + n > kMaxSessionHandles) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the session holds ", entries_.size(),
                     " handles and this command "
                     "would create ",
                     n, " more; a session may hold at most ",
                     kMaxSessionHandles, " (release some)"));
  }
  if (charge_ == nullptr) return absl::OkStatus();
  return charge_->Reserve(n * kHandleMetadataBytes);
}

void HandleTable::Insert(uint64_t id, HandleEntry entry) {
  auto [it, inserted] = entries_.insert_or_assign(id, std::move(entry));
  if (inserted && charge_ != nullptr) charge_->Add(kHandleMetadataBytes);
  if (id > max_id_) max_id_ = id;
}

absl::StatusOr<const HandleEntry*> HandleTable::Find(uint64_t id) const {
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return absl::NotFoundError(
        absl::StrCat("handle ", id,
                     " does not exist in this session (never created, or "
                     "already released)"));
  }
  return &it->second;
}

void HandleTable::Release(uint64_t id) {
  if (entries_.erase(id) != 0 && charge_ != nullptr) {
    charge_->Remove(kHandleMetadataBytes);
  }
}

void HandleTable::Clear() {
  // backward(create_graph=True) makes x.grad's graph save x: a reference
  // cycle (x -> grad -> grad_fn -> x). The daemon has no garbage collector,
  // so at session end the cycles through live handles are cut here, or the
  // session's memory would never return (found by the fuzzer, tests/fuzz).
  for (auto& [id, entry] : entries_) {
    if (AutogradMeta* meta = entry.tensor.autograd()) meta->grad = Tensor();
  }
  if (charge_ != nullptr)
    charge_->Remove(entries_.size() * kHandleMetadataBytes);
  entries_.clear();
}

}  // namespace tensord

// A client session's handles and their metadata. See client/handle_table.h.
#include "client/handle_table.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/chunking.h"
#include "client/status.h"

namespace tensord {
inline namespace client {
namespace internal {

uint64_t HandleTable::Reserve(int count) {
  const uint64_t first = next_handle_;
  next_handle_ += static_cast<uint64_t>(count);
  return first;
}

void HandleTable::Created(uint64_t handle, uint64_t seq,
                          const HandleMeta* known) {
  Entry& entry = entries_[handle];
  entry.seq = seq;
  if (known != nullptr) {
    entry.known = true;
    entry.meta = *known;
  }
}

void HandleTable::SetMeta(uint64_t handle, int wire_dtype,
                          absl::Span<const int64_t> shape,
                          const std::string& device, bool requires_grad,
                          bool is_leaf, const v1::TensorMeta* message) {
  auto it = entries_.find(handle);
  if (it == entries_.end()) return;  // already released
  Entry& state = it->second;
  absl::StatusOr<DType> dtype = DTypeFromWire(wire_dtype);
  const bool is_none = message != nullptr && message->is_none();
  state.known = true;
  state.meta.dtype = dtype.ok() ? *dtype : DType::kFloat32;
  state.meta.shape.assign(shape.begin(), shape.end());
  state.meta.device = device;
  state.meta.requires_grad = requires_grad;
  state.meta.is_none = is_none;
  state.meta.is_leaf = is_leaf;
  if (message != nullptr) {
    state.meta.grad_fn = message->grad_fn();
  } else {
    state.meta.grad_fn.clear();
  }
  if (state.requires_grad_override >= 0) {
    state.meta.requires_grad = state.requires_grad_override != 0;
  }
  state.meta.error =
      message != nullptr ? StatusFromProto(message->error()) : absl::OkStatus();
  if (state.meta.error.ok() && !dtype.ok() && !is_none) {
    state.meta.error = absl::InternalError(absl::StrCat(
        "tensord sent handle ", handle, " with ", dtype.status().message()));
  }
}

void HandleTable::SetRequiresGrad(uint64_t handle, bool requires_grad) {
  auto it = entries_.find(handle);
  if (it == entries_.end()) return;
  it->second.meta.requires_grad = requires_grad;
  it->second.requires_grad_override = requires_grad ? 1 : 0;
}

const HandleTable::Entry* HandleTable::Find(uint64_t handle) const {
  auto it = entries_.find(handle);
  return it == entries_.end() ? nullptr : &it->second;
}

std::optional<uint64_t> HandleTable::KnownBytes(uint64_t handle) const {
  const Entry* entry = Find(handle);
  if (entry == nullptr || !entry->known) return std::nullopt;
  return HealthyBytes(entry->meta).value_or(0);
}

std::optional<uint64_t> HandleTable::HealthyBytes(const HandleMeta& meta) {
  absl::StatusOr<uint64_t> bytes = TensorBytes(meta.dtype, meta.shape);
  if (!meta.error.ok() || meta.is_none || !bytes.ok()) return std::nullopt;
  return *bytes;
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

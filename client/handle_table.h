// What a C++ client session knows about the handles it holds: for each, the
// seq of the command creating it and, once known, its metadata: from the
// client itself (an upload's) or from the Ack of that command (a TensorMeta
// or a packed entry: Note [Packed metas] in proto/tensord.proto). A handle
// leaves the table when its Tensor releases it.
//
// Thread safety: none. Session keeps its table under its mu_: producers
// register handles as they append commands, the reader thread records the
// Acks' metadata, waiters read it.
#ifndef TENSORD_CLIENT_HANDLE_TABLE_H_
#define TENSORD_CLIENT_HANDLE_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "client/dtype.h"
#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {
namespace internal {

// What the client knows about a handle.
struct HandleMeta {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  std::string device;
  bool requires_grad = false;
  absl::Status error;    // non-OK: the handle is poisoned
  bool is_none = false;  // names None (a .grad never set, an unused input)
  bool is_leaf = true;
  std::string grad_fn;  // e.g. "MulBackward0"; empty for leaves
};

class HandleTable {
 public:
  struct Entry {
    uint64_t seq = 0;  // the command creating it; 0 until appended
    bool known = false;
    HandleMeta meta;
    // requires_grad set by this client (SetRequiresGrad) before the Ack came:
    // it wins over the Ack's value (-1: none).
    int8_t requires_grad_override = -1;
  };

  // Reserves `count` consecutive fresh handles; returns the first.
  uint64_t Reserve(int count);
  // `handle` is created by command `seq`; `known` (optional) is its meta
  // when the client knows it.
  void Created(uint64_t handle, uint64_t seq, const HandleMeta* known);
  // Records `handle`'s metadata from an Ack: a TensorMeta (`message`, which
  // also carries error, is_none and grad_fn) or a packed entry (`message`
  // null). Ignored for a handle no longer here.
  void SetMeta(uint64_t handle, int wire_dtype, absl::Span<const int64_t> shape,
               const std::string& device, bool requires_grad, bool is_leaf,
               const v1::TensorMeta* message);
  // A change of `handle`'s requires_grad made by this client.
  void SetRequiresGrad(uint64_t handle, bool requires_grad);
  void Erase(uint64_t handle) { entries_.erase(handle); }

  // Null when `handle` is not live here.
  const Entry* Find(uint64_t handle) const;
  // The byte size of `handle` once its meta is known (0 when it is poisoned
  // or None); nullopt before, or when it is not live.
  std::optional<uint64_t> KnownBytes(uint64_t handle) const;
  // The byte size `meta` describes; nullopt when poisoned or None.
  static std::optional<uint64_t> HealthyBytes(const HandleMeta& meta);

 private:
  absl::flat_hash_map<uint64_t, Entry> entries_;
  uint64_t next_handle_ = 1;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_HANDLE_TABLE_H_

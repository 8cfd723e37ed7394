// A session's handles: client-chosen ids mapped to tensors or to the error
// that spoiled them (Note [Poisoned handles]).
//
// Note [Poisoned handles]: a command that fails stores its status in each of
// its output handles instead of a tensor; a command that reads a poisoned
// handle stores the *same* status (op and call site of the first failure) in
// its own outputs. The user sees the original error whichever value they
// touch later.
//
// Thread-compatible: only the owning session's executor uses it.
#ifndef TENSORD_SERVER_HANDLE_TABLE_H_
#define TENSORD_SERVER_HANDLE_TABLE_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "proto/tensord.pb.h"
#include "runtime/tensor.h"
#include "server/metadata_charge.h"

namespace tensord {

// Live handles of one session (Note [Wire limits] in server/wire_limits.h):
// each costs the daemon its metadata whether or not its bytes are charged
// to a quota (a zero-size tensor or a poisoned handle has none), so their
// number is bounded, and each is charged kHandleMetadataBytes (Note
// [Metadata charge], server/metadata_charge.h).
inline constexpr size_t kMaxSessionHandles = 1 << 20;

// A handle names a tensor (with its autograd meta: Note [Autograd meta] in
// runtime/tensor.h), or an error, or None (a .grad that was never set).
struct HandleEntry {
  Tensor tensor;  // defined unless poisoned or None
  // Set: poisoned with this status, shared by every handle the failure
  // spoiled (Note [Poisoned handles]); null for the common, healthy entry,
  // which then costs no protobuf message.
  std::shared_ptr<const v1::Status> error;
  bool poisoned() const { return error != nullptr; }
  bool is_none() const { return !poisoned() && !tensor.defined(); }
};

// What one live handle keeps, measured with sizeof: its table slot (the id
// and the entry, in a hash table at most 7/8 full and at least 7/16 after it
// grows: up to 16/7 slots per entry), its tensor's autograd meta (made for
// every healthy handle, with make_shared's control block) and a malloc
// header, rounded up to 64 bytes. A shape of more than its inline dims and
// the storage of a fresh tensor add a little (a view's storage is shared).
// A poisoned handle's error is counted apart, once per failure
// (server/kept_errors.h).
inline constexpr size_t kHandleMetadataBytes =
    (sizeof(std::pair<const uint64_t, HandleEntry>) * 16 / 7 +
     sizeof(AutogradMeta) + 16 + 16 + 63) /
    64 * 64;

class HandleTable {
 public:
  // Charges each live handle to `charge` (null: none; it must outlive the
  // table).
  explicit HandleTable(MetadataCharge* charge = nullptr) : charge_(charge) {}
  ~HandleTable() { Clear(); }
  HandleTable(const HandleTable&) = delete;
  HandleTable& operator=(const HandleTable&) = delete;

  // OK when `n` more handles may be created: within kMaxSessionHandles and
  // the quota their metadata is charged to; RESOURCE_EXHAUSTED naming the
  // limit otherwise.
  absl::Status Reserve(size_t n) const;
  // Checks that `id` may name a new handle: non-zero and above every id
  // created so far, and Reserve(1). Does not reserve it.
  absl::Status CheckNew(uint64_t id) const;
  // Stores a new entry (after CheckNew) and raises the high-water mark.
  void Insert(uint64_t id, HandleEntry entry);
  // NOT_FOUND naming the id if the session holds no such handle.
  absl::StatusOr<const HandleEntry*> Find(uint64_t id) const;
  // Drops the handle; unknown ids are ignored (finalizers race with ends).
  void Release(uint64_t id);
  void Clear();

  size_t size() const { return entries_.size(); }
  uint64_t max_id() const { return max_id_; }

 private:
  MetadataCharge* const charge_;
  absl::flat_hash_map<uint64_t, HandleEntry> entries_;
  uint64_t max_id_ = 0;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_HANDLE_TABLE_H_

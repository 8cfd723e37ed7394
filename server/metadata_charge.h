// Note [Metadata charge]: besides tensor bytes, a session makes the daemon
// keep metadata per thing it holds: each live handle (its table slot, its
// tensor's shape, strides and autograd meta), each autograd graph node (its
// attributes, specs and edges; a chain of ops keeps every node alive while
// its last handle lives, whatever was released) and the error text of each
// poisoned handle. A hostile session could hold 2^20 handles of zero-size
// tensors, or 2^20 handles each poisoned by a failure of its own, and so
// keep hundreds of MiB to GiB outside its user's quota. So every such thing
// is counted here at a fixed or measured size (kHandleMetadataBytes per
// handle, a kept error's ByteSizeLong), and whatever a session holds past a
// small free allowance (kFreeMetadataBytes: a script's usual few thousand
// handles cost its quota nothing) is charged to its user's quota on the cpu
// allocator, as its region and shared buffers are (server/external_charge.h).
// Charges move in whole blocks (kBlockBytes) with hysteresis, so the hot
// path (a handle made or released) is an atomic add.
//
// Reserve() before creating things makes the session's quota hold them
// (RESOURCE_EXHAUSTED, with the allocator's over-quota text, when it
// cannot); Add() then counts them and never fails; Remove() gives back.
//
// Thread-safe: the executor adds and removes; a kept error may be freed on
// whichever thread drops its last reference.
#ifndef TENSORD_SERVER_METADATA_CHARGE_H_
#define TENSORD_SERVER_METADATA_CHARGE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "runtime/autograd/node.h"
#include "runtime/core/mutex.h"
#include "runtime/memory/caching_allocator.h"
#include "server/external_charge.h"

namespace tensord {

class MetadataCharge : public MetadataCounter {
 public:
  static constexpr size_t kFreeMetadataBytes = 4 << 20;
  static constexpr size_t kBlockBytes = 1 << 20;

  // Charges `session`'s account on `quota` (null: count only, never
  // refuse) for what is held past `free_bytes`.
  MetadataCharge(CachingAllocator* quota, uint64_t session,
                 size_t free_bytes = kFreeMetadataBytes)
      : quota_(quota), session_(session), free_bytes_(free_bytes) {
    covered_.store(free_bytes);
  }
  MetadataCharge(const MetadataCharge&) = delete;
  MetadataCharge& operator=(const MetadataCharge&) = delete;

  // OK when the quota holds `bytes` more than is held now (blocks are
  // charged as needed and kept); else RESOURCE_EXHAUSTED saying what.
  absl::Status Reserve(size_t bytes);
  // Counts `bytes` more held (charging more blocks if a Reserve did not
  // cover them; the quota may then be exceeded by them, and the next
  // Reserve fails).
  void Add(size_t bytes) override;
  // Counts `bytes` fewer held; blocks no longer needed are given back.
  void Remove(size_t bytes) override;

  size_t held() const { return held_.load(std::memory_order_relaxed); }
  size_t charged() const;  // bytes charged to the quota now

 private:
  // Charges blocks until `need` bytes are covered; `must`: refuse (and
  // charge nothing more) when the quota cannot hold them.
  absl::Status Cover(size_t need, bool must);
  void GiveBack();
  // Whether a block of `covered` can go with `held` bytes held.
  static bool Spare(size_t held, size_t covered);

  CachingAllocator* const quota_;
  const uint64_t session_;
  const size_t free_bytes_;
  std::atomic<size_t> held_{0};
  std::atomic<size_t> covered_{0};  // free_bytes_ + the blocks' bytes
  mutable Mutex mu_;                // serialises block changes
  std::vector<std::unique_ptr<ExternalCharge>> blocks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tensord

#endif  // TENSORD_SERVER_METADATA_CHARGE_H_

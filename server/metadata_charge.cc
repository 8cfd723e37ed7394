#include "server/metadata_charge.h"

#include "absl/strings/str_cat.h"

namespace tensord {

absl::Status MetadataCharge::Reserve(size_t bytes) {
  const size_t need = held_.load(std::memory_order_relaxed) + bytes;
  if (need <= covered_.load(std::memory_order_acquire)) {
    return absl::OkStatus();
  }
  return Cover(need, /*must=*/true);
}

void MetadataCharge::Add(size_t bytes) {
  const size_t held = held_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (held > covered_.load(std::memory_order_acquire)) {
    Cover(held, /*must=*/false).IgnoreError();
  }
}

void MetadataCharge::Remove(size_t bytes) {
  const size_t held = held_.fetch_sub(bytes, std::memory_order_relaxed) - bytes;
  const size_t covered = covered_.load(std::memory_order_acquire);
  if (covered > free_bytes_ && Spare(held, covered)) GiveBack();
}

absl::Status MetadataCharge::Cover(size_t need, bool must) {
  MutexLock lock(&mu_);
  while (free_bytes_ + blocks_.size() * kBlockBytes < need) {
    absl::StatusOr<std::unique_ptr<ExternalCharge>> block =
        ExternalCharge::Make(quota_, session_, kBlockBytes);
    if (!block.ok()) {
      if (!must) return block.status();
      return absl::ResourceExhaustedError(absl::StrCat(
          "the session's handles and kept error texts (",
          held_.load(std::memory_order_relaxed),
          " bytes of metadata, the first ", free_bytes_,
          " free) are charged to its user's quota, which cannot hold more: ",
          block.status().message(), "; release handles"));
    }
    blocks_.push_back(*std::move(block));
    covered_.store(free_bytes_ + blocks_.size() * kBlockBytes,
                   std::memory_order_release);
  }
  return absl::OkStatus();
}

// Hysteresis: a block goes back only once half a block more than it is
// free, so a session hovering at a block's edge does not charge and return
// it per handle; all go back when nothing is held.
bool MetadataCharge::Spare(size_t held, size_t covered) {
  return held == 0 || held + kBlockBytes + kBlockBytes / 2 <= covered;
}

void MetadataCharge::GiveBack() {
  MutexLock lock(&mu_);
  const size_t held = held_.load(std::memory_order_relaxed);
  while (!blocks_.empty() &&
         Spare(held, free_bytes_ + blocks_.size() * kBlockBytes)) {
    blocks_.pop_back();
    covered_.store(free_bytes_ + blocks_.size() * kBlockBytes,
                   std::memory_order_release);
  }
}

size_t MetadataCharge::charged() const {
  MutexLock lock(&mu_);
  return blocks_.size() * kBlockBytes;
}

}  // namespace tensord

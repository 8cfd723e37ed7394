#include "server/shared_buffers.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace tensord {

SharedBuffers::SharedBuffers(uint64_t session, CachingAllocator* quota,
                             size_t max_bytes)
    : session_(session), quota_(quota), max_bytes_(max_bytes) {}

SharedBuffers::~SharedBuffers() { Clear(); }

absl::Status SharedBuffers::Allocate(uint64_t bytes, v1::SharedBuffer* reply) {
  if (max_bytes_ == 0) {
    return absl::FailedPreconditionError(
        "shared buffers are turned off on this daemon "
        "(--shared_buffer_bytes=0); transfer from ordinary memory instead");
  }
  if (bytes == 0) {
    return absl::InvalidArgumentError("a shared buffer of 0 bytes was asked");
  }
  const size_t held = usage().bytes;
  if (bytes > max_bytes_ - held) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate a shared buffer of ", FormatBytes(bytes),
        ": the session's shared buffers already hold ", FormatBytes(held),
        " of the ", FormatBytes(max_bytes_),
        " a session may have (tensord --shared_buffer_bytes); free buffers "
        "no longer needed"));
  }
  if (buffers_.size() >= kMaxSharedBuffers) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate a shared buffer: the session already has ",
        buffers_.size(), ", the most a session may hold; free one first"));
  }
  Buffer buffer;
  buffer.bytes = bytes;
  if (quota_ != nullptr) {
    absl::StatusOr<uint64_t> account = quota_->ChargeExternal(session_, bytes);
    if (!account.ok()) {
      return absl::Status(
          account.status().code(),
          absl::StrCat("shared buffer: ", account.status().message()));
    }
    buffer.account = *account;
  }
  absl::StatusOr<std::unique_ptr<ShmRegion>> region =
      ShmRegion::Create(ShmRegion::kDataOffset + bytes, /*populate=*/true);
  if (!region.ok()) {
    Uncharge(buffer);
    return region.status();
  }
  buffer.region = *std::move(region);
  const uint64_t id = next_id_++;
  reply->set_region(id);
  *reply->mutable_shm() = buffer.region->Describe();
  buffers_.emplace(id, std::move(buffer));
  MutexLock lock(&usage_mu_);
  usage_ = {buffers_.size(), usage_.bytes + bytes};
  return absl::OkStatus();
}

void SharedBuffers::Free(uint64_t id) {
  auto it = buffers_.find(id);
  if (it == buffers_.end()) return;
  const uint64_t bytes = it->second.bytes;
  Uncharge(it->second);
  buffers_.erase(it);
  MutexLock lock(&usage_mu_);
  usage_ = {buffers_.size(), usage_.bytes - bytes};
}

void SharedBuffers::Clear() {
  for (const auto& [id, buffer] : buffers_) Uncharge(buffer);
  buffers_.clear();
  MutexLock lock(&usage_mu_);
  usage_ = {};
}

SharedBufferUsage SharedBuffers::usage() const {
  MutexLock lock(&usage_mu_);
  return usage_;
}

absl::StatusOr<std::shared_ptr<const ShmRegion>> SharedBuffers::Find(
    uint64_t id, absl::string_view what) const {
  auto it = buffers_.find(id);
  if (it == buffers_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": region ", id,
        " is not a shared buffer of this session (never allocated, or "
        "already freed)"));
  }
  return it->second.region;
}

void SharedBuffers::Uncharge(const Buffer& buffer) {
  if (quota_ != nullptr) quota_->UnchargeExternal(buffer.account, buffer.bytes);
}

}  // namespace tensord

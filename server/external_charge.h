// Memory a session holds outside the allocators that its user's quota
// covers all the same (its shared-memory region, server/shm_transfer.h):
// charged to the session's account on the cpu allocator while this lives
// (CachingAllocator::ChargeExternal, as shared buffers are), returned when
// it is destroyed. Thread-compatible.
#ifndef TENSORD_SERVER_EXTERNAL_CHARGE_H_
#define TENSORD_SERVER_EXTERNAL_CHARGE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "runtime/memory/caching_allocator.h"

namespace tensord {

class ExternalCharge {
 public:
  // Charges `bytes` for `session` to `quota` (null: nothing to charge);
  // RESOURCE_EXHAUSTED, the allocator's over-quota message, when the
  // session's account cannot hold them.
  static absl::StatusOr<std::unique_ptr<ExternalCharge>> Make(
      CachingAllocator* quota, uint64_t session, size_t bytes) {
    uint64_t account = 0;
    if (quota != nullptr) {
      absl::StatusOr<uint64_t> charged = quota->ChargeExternal(session, bytes);
      if (!charged.ok()) return charged.status();
      account = *charged;
    }
    return std::unique_ptr<ExternalCharge>(
        new ExternalCharge(quota, account, bytes));
  }
  ~ExternalCharge() {
    if (quota_ != nullptr) quota_->UnchargeExternal(account_, bytes_);
  }
  ExternalCharge(const ExternalCharge&) = delete;
  ExternalCharge& operator=(const ExternalCharge&) = delete;

  size_t bytes() const { return bytes_; }

 private:
  ExternalCharge(CachingAllocator* quota, uint64_t account, size_t bytes)
      : quota_(quota), account_(account), bytes_(bytes) {}

  CachingAllocator* const quota_;
  const uint64_t account_;  // the account charged (the session may leave it)
  const size_t bytes_;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_EXTERNAL_CHARGE_H_

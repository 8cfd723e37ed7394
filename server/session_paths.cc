#include "server/session_paths.h"

#include <string>
#include <utility>

#include "spdlog/spdlog.h"

namespace tensord {

// The cpu allocator: the user's quota there covers what a session holds in
// host memory outside it (its region, replies kept for a resume).
CachingAllocator* SessionHostQuota(const SessionParams& params) {
  Device* cpu = params.devices->Find("cpu");
  return cpu == nullptr ? nullptr : cpu->allocator();
}

// The region's bytes count against the user's quota while it lives (Note
// [Wire limits]): a session the quota cannot hold one for has none, and its
// client uses the stream. It holds the nonce, the mailbox and the command
// ring, no payload (bytes go through shared buffers): `shm_bytes` only
// turns it on and bounds the ring (server/welcome.h).
std::unique_ptr<ExternalCharge> ChargeSessionRegion(
    const SessionParams& params) {
  if (params.shm_bytes == 0) return nullptr;
  const size_t bytes = ShmRegion::BytesFor(params.ring_bytes);
  auto charge =
      ExternalCharge::Make(SessionHostQuota(params), params.number, bytes);
  if (!charge.ok()) {
    spdlog::info(
        "session {}: no shared-memory transfer (the region's {} bytes: {}); "
        "using the stream",
        params.id, bytes, std::string(charge.status().message()));
    return nullptr;
  }
  return *std::move(charge);
}

std::unique_ptr<ShmRegion> MakeSessionRegion(const SessionParams& params,
                                             const ExternalCharge* charge) {
  if (params.shm_bytes == 0 || charge == nullptr) return nullptr;
  auto region = ShmRegion::Create(ShmRegion::BytesFor(params.ring_bytes),
                                  /*populate=*/false, params.ring_bytes);
  if (!region.ok()) {
    spdlog::warn("session {}: no shared-memory transfer ({}); using the stream",
                 params.id, region.status().ToString());
    return nullptr;
  }
  return *std::move(region);
}

std::shared_ptr<CmaPeer> MakeSessionCmaPeer(const SessionParams& params,
                                            const ShmRegion* shm) {
  if (shm == nullptr || !params.cma) return nullptr;
  auto peer = CmaPeer::Create();
  if (!peer.ok()) {
    spdlog::warn("session {}: no cross-memory attach ({})", params.id,
                 peer.status().ToString());
    return nullptr;
  }
  return *std::move(peer);
}

std::shared_ptr<BulkChannel> MakeSessionBulk(const SessionParams& params) {
  if (params.bulk_token.empty()) return nullptr;
  return std::make_shared<BulkChannel>(params.bulk_stall, params.bulk_lanes);
}

}  // namespace tensord

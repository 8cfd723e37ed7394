#include "server/welcome.h"

#include <algorithm>

#include "runtime/core/status_macros.h"
#include "runtime/ops/op_table.h"
#include "server/proto_convert.h"
#include "server/secure_random.h"
#include "server/version.h"

namespace tensord {

size_t RingBytesFor(size_t shm_bytes) {
  constexpr size_t kMaxRing = 4 << 20;
  if (shm_bytes < (1 << 20)) return 0;
  size_t ring = kMaxRing;
  while (ring > shm_bytes / 16) ring >>= 1;
  return ring;
}

// A session's region counts against its user's quota (Note [Wire limits];
// server/session.cc): a user with one gets a region of at most a sixteenth
// of it (a power of two, at least 1 MiB; none under a 16 MiB quota), so
// that regions leave the quota to tensors.
size_t RegionBytesFor(size_t shm_bytes, uint64_t quota_bytes) {
  if (quota_bytes == 0 || shm_bytes == 0) return shm_bytes;
  size_t region = size_t{1} << 20;
  if (region > quota_bytes / 16) return 0;
  while (region * 2 <= quota_bytes / 16) region *= 2;
  return std::min(shm_bytes, region);
}

absl::Status GrantTransports(const v1::Hello& hello, const User& user,
                             const SessionLimits& limits, bool bulk_listening,
                             bool cma_socket_set, SessionParams& params) {
  params.shm_bytes = hello.shm_transfer()
                         ? RegionBytesFor(limits.shm_bytes, user.quota_bytes)
                         : 0;
  if (limits.command_ring && hello.command_ring()) {
    params.ring_bytes = RingBytesFor(params.shm_bytes);
    params.ring_spin_us = limits.ring_spin_us;
  }
  if (hello.bulk() && bulk_listening) {
    TD_ASSIGN_OR_RETURN(params.bulk_token, SecureRandomHex(16));
    params.bulk_stall = limits.bulk_stall;
    params.bulk_lanes = limits.bulk_lanes;
  }
  // Cross-memory attach: the session gets a ticket; its process binds later.
  params.cma = limits.cma && hello.shm_transfer() && cma_socket_set;
  return absl::OkStatus();
}

v1::Welcome MakeWelcome(const Session& session, const User& user,
                        const DeviceRegistry& devices,
                        const std::string& cma_socket, int bulk_port) {
  v1::Welcome w;
  w.set_session_id(session.params().id);
  w.set_resume_secret(session.params().resume_secret);
  for (const auto& d : devices.devices()) {
    *w.add_devices() = DeviceToProto(d->description());
  }
  const auto& table = OpTable();
  for (uint32_t i = 0; i < table.size(); ++i) {
    *w.add_ops() = OpSchemaToProto(i, table[i]);
  }
  w.set_protocol_version(kProtocolVersion);
  w.set_server_version(kServerVersion);
  w.set_chunk_bytes(kChunkBytes);
  w.set_max_frame_bytes(kMaxFrameBytes);
  w.set_default_device(devices.default_device()->name());
  if (session.shm() != nullptr) *w.mutable_shm() = session.shm()->Describe();
  // The user's quota now (Note [Tokens reload]): a session resumed after a
  // SIGHUP changed it is told the new one, not the one it opened with.
  w.set_quota_bytes(user.quota_bytes > 0 ? user.quota_bytes : 0);
  if (session.cma() != nullptr) {
    w.set_cma_ticket(session.cma()->ticket());
    w.set_cma(!w.cma_ticket().empty());
    if (w.cma()) w.set_cma_socket(cma_socket);
  }
  w.set_packed_commands(true);
  w.set_memory_stats(true);
  w.set_note_fallbacks(true);
  if (session.bulk() != nullptr) {
    w.set_bulk_port(static_cast<uint32_t>(bulk_port));
    w.set_bulk_token(session.params().bulk_token);
    w.set_bulk_lanes(session.bulk()->lanes_offered());
  }
  return w;
}

}  // namespace tensord

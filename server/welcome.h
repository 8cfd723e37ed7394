// What a session's Hello negotiates: the protocol constants, the limits the
// daemon sets sessions, the transports granted (the sizes of its
// shared-memory region and command ring, bulk socket, cross-memory attach),
// and the Welcome it is answered with (the session id and secret, the
// devices, the op catalog, the transports).
#ifndef TENSORD_SERVER_WELCOME_H_
#define TENSORD_SERVER_WELCOME_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "proto/tensord.pb.h"
#include "runtime/device.h"
#include "server/auth.h"
#include "server/session.h"

namespace tensord {

inline constexpr uint32_t kProtocolVersion = v1::PROTOCOL_VERSION_CURRENT;
inline constexpr size_t kChunkBytes = 1 << 20;
inline constexpr size_t kMaxFrameBytes = 8 << 20;

struct SessionLimits {
  // How long a session whose stream dropped waits to be resumed before its
  // handles are released (0: released at once).
  absl::Duration resume_grace = absl::Seconds(30);
  int max_sessions_per_user = 16;
  size_t max_queued_batches = 256;
  size_t max_queued_bytes = 32 << 20;  // of parsed batches (Session's queue)
  // Budget of the same-host region of a session whose client asks for one
  // (Hello.shm_transfer): its command ring is at most a sixteenth of it
  // (RingBytesFor); the region holds no payload (ShmRegion::BytesFor is its
  // size). 0 disables it.
  size_t shm_bytes = 256 << 20;
  // The most bytes of shared buffers (AllocateShared) one session may hold;
  // 0 turns them off. Quotas apply on top.
  size_t shared_buffer_bytes = size_t{8} << 30;
  bool graph_replay = false;  // Note [Graph replay] (--cuda_graph_replay)
  // Whether a same-host client may transfer by cross-memory attach
  // (server/cma.h; tensord --cma).
  bool cma = true;
  // Whether a same-host client may write its batches into a command ring in
  // its region (server/command_ring.h; tensord --command_ring), and how long
  // the ring's reader polls (yielding its CPU) before it sleeps: waking a
  // sleeping thread took 70-100 us on the 2-vCPU VM of BENCHMARKS.md.
  bool command_ring = true;
  int ring_spin_us = 100;
  // How long a transfer on a session's bulk socket waits for the client to
  // move a byte (server/bulk_socket.h; tensord --bulk_stall).
  absl::Duration bulk_stall = absl::Seconds(30);
  // How many connections ("lanes") a session's bulk socket may have, a
  // large transfer striped over them (tensord --bulk_lanes, 1 to 8).
  uint32_t bulk_lanes = 4;
};

// The command ring's size for a session region of `shm_bytes`: 4 MiB, less
// for small regions (a sixteenth of it, a power of two), 0 below 1 MiB.
size_t RingBytesFor(size_t shm_bytes);
// The region of a session whose user has `quota_bytes` (0: none) when the
// daemon offers `shm_bytes`: at most a sixteenth of the quota (a power of
// two, at least 1 MiB; 0 under a 16 MiB quota).
size_t RegionBytesFor(size_t shm_bytes, uint64_t quota_bytes);

// The transfer paths `hello` asks for, as the daemon offers them (`limits`;
// the bulk socket while its listener is up, cross-memory attach while its
// binding socket is): the region, ring, bulk and cma fields of `params`.
absl::Status GrantTransports(const v1::Hello& hello, const User& user,
                             const SessionLimits& limits, bool bulk_listening,
                             bool cma_socket_set, SessionParams& params);

// The Welcome of `session` (new or resumed): `user` as the tokens file
// says now (its quota, Welcome.quota_bytes); `cma_socket` (empty: none) and
// `bulk_port` (0: none) the daemon's endpoints for the transports granted.
v1::Welcome MakeWelcome(const Session& session, const User& user,
                        const DeviceRegistry& devices,
                        const std::string& cma_socket, int bulk_port);

}  // namespace tensord

#endif  // TENSORD_SERVER_WELCOME_H_

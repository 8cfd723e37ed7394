// How a session's transfer paths besides its stream (SessionInfo.paths) are
// made from its SessionParams: the same-host region, charged to the user's
// quota while it lives (Note [Wire limits]); cross-memory attach, which
// needs the region; the bulk socket's channel. A path that cannot be made
// is absent (null, and logged when something failed): the client then uses
// the stream. The Session constructor calls these in its member order; the
// session owns what they return.
#ifndef TENSORD_SERVER_SESSION_PATHS_H_
#define TENSORD_SERVER_SESSION_PATHS_H_

#include <memory>

#include "server/bulk_socket.h"
#include "server/cma.h"
#include "server/external_charge.h"
#include "server/session.h"
#include "server/shm_transfer.h"

namespace tensord {

// The cpu allocator: the user's quota there covers what a session holds in
// host memory outside it (its region, replies kept for a resume). Null
// without a cpu device.
CachingAllocator* SessionHostQuota(const SessionParams& params);

// The region's bytes charged to the user's quota, or null: no region asked
// for, or the quota cannot hold one (the session has none then).
std::unique_ptr<ExternalCharge> ChargeSessionRegion(
    const SessionParams& params);

// The region (and its command ring's bytes), or null: none asked for, no
// `charge` for it, or its creation failed.
std::unique_ptr<ShmRegion> MakeSessionRegion(const SessionParams& params,
                                             const ExternalCharge* charge);

// The cross-memory-attach peer, or null: not offered, no region `shm`, or
// its creation failed.
std::shared_ptr<CmaPeer> MakeSessionCmaPeer(const SessionParams& params,
                                            const ShmRegion* shm);

// The bulk socket's channel, or null without a bulk token.
std::shared_ptr<BulkChannel> MakeSessionBulk(const SessionParams& params);

}  // namespace tensord

#endif  // TENSORD_SERVER_SESSION_PATHS_H_

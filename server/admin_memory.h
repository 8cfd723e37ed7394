// The memory side of the Admin service as plain functions of the devices,
// so that it is tested without gRPC (admin_memory_test.cc): the stats of
// every pool a device owns, and empty_cache over all of them.
//
// A device's pools are its own memory (the caching allocator) and, where it
// has one, its pinned staging cache (Device::staging_allocator: the host
// buffers uploads and downloads stage through, Note [Async downloads],
// Note [Async uploads]). The staging pool is reported as its own entry
// (DeviceMemoryStats.pool = "pinned staging"), never added into the
// device's figures: it is host memory, and it belongs to the daemon.
//
// Shared host buffers (server/shared_buffers.h) belong to no device pool:
// MemoryStatsResponse.shared_buffers sums what the sessions report.
//
// Thread safety: as the allocators (every function may run concurrently
// with sessions allocating).
#ifndef TENSORD_SERVER_ADMIN_MEMORY_H_
#define TENSORD_SERVER_ADMIN_MEMORY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "proto/admin.pb.h"
#include "runtime/device.h"

namespace tensord {

inline constexpr char kStagingPool[] = "pinned staging";

// Appends `device`'s entry, then its staging pool's when it has one.
// `session_id_of` names a session number ("#N" once ended).
void AddMemoryStats(Device& device,
                    const std::function<std::string(uint64_t)>& session_id_of,
                    v1::MemoryStatsResponse* out);

// Fills `out->shared_buffers` from the sessions' own figures
// (SessionInfo.shared_buffers, shared_buffer_bytes); sessions holding none
// are left out of its per-session maps.
void SetSharedBufferStats(const std::vector<v1::SessionInfo>& sessions,
                          v1::MemoryStatsResponse* out);

// Releases the cached, unused memory of `device` and of its staging pool;
// adds the bytes to `out` (released_bytes counts both).
void EmptyDeviceCaches(Device& device, v1::EmptyCacheResponse* out);

// Memory history (Note [Memory history]): applies `req`'s action to the
// allocator of `device` (not its staging pool: the daemon's own host
// buffers) and appends its state to `out`. INVALID_ARGUMENT for
// max_entries over kMaxHistoryEntries.
inline constexpr uint64_t kDefaultHistoryEntries = 100000;
inline constexpr uint64_t kMaxHistoryEntries = 10000000;
absl::Status RecordMemoryHistory(Device& device,
                                 const v1::RecordMemoryHistoryRequest& req,
                                 v1::RecordMemoryHistoryResponse* out);

}  // namespace tensord

#endif  // TENSORD_SERVER_ADMIN_MEMORY_H_

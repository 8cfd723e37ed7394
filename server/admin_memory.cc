#include "server/admin_memory.h"

#include "absl/strings/str_cat.h"

namespace tensord {
namespace {

v1::DeviceMemoryStats* AddPool(
    const std::string& device, const char* pool, CachingAllocator& allocator,
    const std::function<std::string(uint64_t)>& session_id_of,
    v1::MemoryStatsResponse* out) {
  const MemoryStats stats = allocator.GetStats();
  v1::DeviceMemoryStats* entry = out->add_devices();
  entry->set_device(device);
  entry->set_pool(pool);
  for (const auto& [key, value] : StatsToMap(stats)) {
    (*entry->mutable_stats())[key] = value;
  }
  for (const auto& [number, bytes] : stats.session_bytes) {
    if (bytes != 0)
      (*entry->mutable_session_bytes())[session_id_of(number)] = bytes;
  }
  return entry;
}

}  // namespace

void AddMemoryStats(Device& device,
                    const std::function<std::string(uint64_t)>& session_id_of,
                    v1::MemoryStatsResponse* out) {
  AddPool(device.name(), "", *device.allocator(), session_id_of, out);
  if (CachingAllocator* staging = device.staging_allocator()) {
    AddPool(device.name(), kStagingPool, *staging, session_id_of, out);
  }
}

void SetSharedBufferStats(const std::vector<v1::SessionInfo>& sessions,
                          v1::MemoryStatsResponse* out) {
  v1::SharedBufferStats* stats = out->mutable_shared_buffers();
  stats->Clear();
  for (const v1::SessionInfo& s : sessions) {
    if (s.shared_buffers() == 0) continue;
    stats->set_count(stats->count() + s.shared_buffers());
    stats->set_bytes(stats->bytes() + s.shared_buffer_bytes());
    (*stats->mutable_session_count())[s.session_id()] = s.shared_buffers();
    (*stats->mutable_session_bytes())[s.session_id()] = s.shared_buffer_bytes();
  }
}

absl::Status RecordMemoryHistory(Device& device,
                                 const v1::RecordMemoryHistoryRequest& req,
                                 v1::RecordMemoryHistoryResponse* out) {
  CachingAllocator* allocator = device.allocator();
  switch (req.action()) {
    case v1::RecordMemoryHistoryRequest::ON: {
      const uint64_t n =
          req.max_entries() == 0 ? kDefaultHistoryEntries : req.max_entries();
      if (n > kMaxHistoryEntries) {
        return absl::InvalidArgumentError(
            absl::StrCat("max_entries ", n, " is over the limit of ",
                         kMaxHistoryEntries, " events per device"));
      }
      allocator->RecordHistory(n);
      break;
    }
    case v1::RecordMemoryHistoryRequest::OFF:
      allocator->RecordHistory(0);
      break;
    default:
      break;
  }
  v1::MemoryHistoryState* state = out->add_devices();
  state->set_device(device.name());
  state->set_max_entries(allocator->history().capacity());
  state->set_events(allocator->history().size());
  return absl::OkStatus();
}

void EmptyDeviceCaches(Device& device, v1::EmptyCacheResponse* out) {
  int64_t released = device.allocator()->EmptyCache();
  if (CachingAllocator* staging = device.staging_allocator()) {
    const int64_t staged = staging->EmptyCache();
    out->set_released_staging_bytes(out->released_staging_bytes() + staged);
    released += staged;
  }
  out->set_released_bytes(out->released_bytes() + released);
}

}  // namespace tensord

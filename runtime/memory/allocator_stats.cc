// Flattening of MemoryStats into torch.cuda.memory_stats()-style keys.
#include "runtime/memory/allocator_stats.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tensord {
namespace {

constexpr const char* kPoolNames[kNumStatPools] = {"all", "small_pool",
                                                   "large_pool"};

void AddArray(std::map<std::string, int64_t>& out, const char* name,
              const StatArray& s) {
  for (int p = 0; p < kNumStatPools; ++p) {
    const std::string prefix = absl::StrCat(name, ".", kPoolNames[p], ".");
    out[prefix + "current"] = s[p].current;
    out[prefix + "peak"] = s[p].peak;
    out[prefix + "allocated"] = s[p].allocated;
    out[prefix + "freed"] = s[p].freed;
  }
}

}  // namespace

std::map<std::string, int64_t> SessionStatsToMap(const SessionStats& stats) {
  std::map<std::string, int64_t> out;
  AddArray(out, "allocation", stats.allocation);
  AddArray(out, "allocated_bytes", stats.allocated_bytes);
  AddArray(out, "requested_bytes", stats.requested_bytes);
  out["num_ooms"] = stats.num_ooms;
  out["num_quota_rejections"] = stats.num_quota_rejections;
  return out;
}

std::map<std::string, int64_t> StatsToMap(const MemoryStats& stats) {
  std::map<std::string, int64_t> out;
  const DeviceStats& d = stats.device;
  AddArray(out, "allocation", d.allocation);
  AddArray(out, "segment", d.segment);
  AddArray(out, "active", d.active);
  AddArray(out, "inactive_split", d.inactive_split);
  AddArray(out, "allocated_bytes", d.allocated_bytes);
  AddArray(out, "reserved_bytes", d.reserved_bytes);
  AddArray(out, "active_bytes", d.active_bytes);
  AddArray(out, "inactive_split_bytes", d.inactive_split_bytes);
  AddArray(out, "requested_bytes", d.requested_bytes);
  out["num_alloc_retries"] = d.num_alloc_retries;
  out["num_ooms"] = d.num_ooms;
  out["num_device_alloc"] = d.num_device_alloc;
  out["num_device_free"] = d.num_device_free;
  for (const auto& [session, bytes] : stats.session_bytes) {
    out[absl::StrCat("session.", session, ".allocated_bytes")] = bytes;
  }
  for (const auto& [stream, bytes] : stats.stream_bytes) {
    out[absl::StrFormat("stream.0x%x.allocated_bytes",
                        reinterpret_cast<uintptr_t>(stream))] = bytes;
  }
  out["cached_free_bytes"] = stats.cached_free_bytes;
  out["largest_free_block_bytes"] = stats.largest_free_block;
  out["fragmentation_ppm"] =
      static_cast<int64_t>(std::llround(stats.fragmentation * 1e6));
  out["capacity_bytes"] = stats.capacity;
  out["num_quota_rejections"] = stats.quota_rejections;
  return out;
}

}  // namespace tensord

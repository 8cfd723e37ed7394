// CachingAllocator's read-only side: statistics, snapshots, the action trace,
// quotas and the out-of-memory message. Every method takes the same mutex as
// the allocation path, so each result is a consistent point in time.
#include <cstdlib>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "runtime/memory/caching_allocator.h"

namespace tensord {

std::string FormatBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (std::llabs(bytes) < 1024) return absl::StrCat(bytes, " B");
  if (std::llabs(bytes) < (int64_t{1} << 20)) {
    return absl::StrFormat("%.2f KiB", b / 1024.0);
  }
  if (std::llabs(bytes) < (int64_t{1} << 30)) {
    return absl::StrFormat("%.2f MiB", b / (1024.0 * 1024.0));
  }
  return absl::StrFormat("%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
}

int DeviceIndexFromName(const std::string& device_name) {
  const size_t colon = device_name.rfind(':');
  int index = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(device_name.substr(colon + 1), &index) || index < 0) {
    return 0;
  }
  return index;
}

int64_t CachingAllocator::SessionBytes(uint64_t session) const {
  MutexLock lock(&mu_);
  return SessionBytesLocked(session);
}

int64_t CachingAllocator::SessionBytesLocked(uint64_t session) const {
  auto it = session_stats_.map.find(session);
  return it == session_stats_.map.end()
             ? 0
             : it->second.allocated_bytes[kAllPools].current;
}

SessionStats CachingAllocator::SessionStatsOf(uint64_t session) const {
  MutexLock lock(&mu_);
  return session_stats_.Find(session);
}

void CachingAllocator::ResetSessionPeaks(uint64_t session) {
  MutexLock lock(&mu_);
  auto it = session_stats_.map.find(session);
  if (it == session_stats_.map.end()) return;
  SessionStats& s = it->second;
  for (StatArray* a : {&s.allocation, &s.allocated_bytes, &s.requested_bytes}) {
    for (Stat& stat : *a) stat.ResetPeak();
  }
}

size_t CachingAllocator::AllocationSize(const void* ptr) const {
  MutexLock lock(&mu_);
  auto it = allocated_.find(ptr);
  return it == allocated_.end() ? 0 : it->second->size;
}

void CachingAllocator::SetSessionQuota(uint64_t session, int64_t bytes) {
  MutexLock lock(&mu_);
  if (bytes < 0) {
    quotas_.erase(session);
  } else {
    quotas_[session] = bytes;
  }
}

void CachingAllocator::JoinAccount(uint64_t session, uint64_t account,
                                   std::string name) {
  MutexLock lock(&mu_);
  account_of_[session] = account;
  account_names_[account] = std::move(name);
}

void CachingAllocator::LeaveAccount(uint64_t session) {
  MutexLock lock(&mu_);
  account_of_.erase(session);
}

void CachingAllocator::EndSession(uint64_t session) {
  MutexLock lock(&mu_);
  account_of_.erase(session);
  auto it = session_stats_.map.find(session);
  if (it == session_stats_.map.end()) return;
  if (it->second.allocated_bytes[kAllPools].current == 0) {
    session_stats_.Erase(session);
  } else {
    ended_sessions_.insert(session);  // FreeLocked drops them with its last
  }
}

absl::StatusOr<uint64_t> CachingAllocator::ChargeExternal(uint64_t session,
                                                          size_t bytes) {
  MutexLock lock(&mu_);
  const uint64_t account = AccountOf(session);
  if (!quotas_.empty()) {
    absl::Status quota = CheckQuota(bytes, account);
    if (!quota.ok()) return quota;
  }
  *account_bytes_.Get(account) += static_cast<int64_t>(bytes);
  return account;
}

void CachingAllocator::UnchargeExternal(uint64_t account, size_t bytes) {
  MutexLock lock(&mu_);
  *account_bytes_.Get(account) -= static_cast<int64_t>(bytes);
}

std::optional<int64_t> CachingAllocator::SessionQuota(uint64_t session) const {
  MutexLock lock(&mu_);
  auto it = quotas_.find(session);
  if (it == quotas_.end()) return std::nullopt;
  return it->second;
}

MemoryStats CachingAllocator::GetStats() const {
  MutexLock lock(&mu_);
  MemoryStats out;
  out.device = stats_;
  for (const auto& [session, mine] : session_stats_.map) {
    const int64_t bytes = mine.allocated_bytes[kAllPools].current;
    if (bytes != 0) out.session_bytes[session] = bytes;
  }
  for (const auto& [stream, bytes] : stream_bytes_.map) {
    if (bytes != 0) out.stream_bytes[stream] = bytes;
  }
  for (const BlockPool* pool : {&small_pool_, &large_pool_}) {
    for (const Block* b : pool->blocks) {
      const auto size = static_cast<int64_t>(b->size);
      out.cached_free_bytes += size;
      if (size > out.largest_free_block) out.largest_free_block = size;
    }
  }
  if (out.cached_free_bytes > 0) {
    out.fragmentation = 1.0 - static_cast<double>(out.largest_free_block) /
                                  static_cast<double>(out.cached_free_bytes);
  }
  out.capacity = static_cast<int64_t>(backend_->Capacity());
  out.quota_rejections = quota_rejections_;
  return out;
}

void CachingAllocator::ResetPeakStats() {
  MutexLock lock(&mu_);
  for (StatArray* a : {&stats_.allocation, &stats_.segment, &stats_.active,
                       &stats_.inactive_split, &stats_.allocated_bytes,
                       &stats_.reserved_bytes, &stats_.active_bytes,
                       &stats_.inactive_split_bytes, &stats_.requested_bytes}) {
    for (Stat& s : *a) s.ResetPeak();
  }
}

void CachingAllocator::ResetAccumulatedStats() {
  MutexLock lock(&mu_);
  for (StatArray* a : {&stats_.allocation, &stats_.segment, &stats_.active,
                       &stats_.inactive_split, &stats_.allocated_bytes,
                       &stats_.reserved_bytes, &stats_.active_bytes,
                       &stats_.inactive_split_bytes, &stats_.requested_bytes}) {
    for (Stat& s : *a) s.ResetAccumulated();
  }
  stats_.num_alloc_retries = stats_.num_ooms = 0;
  stats_.num_device_alloc = stats_.num_device_free = 0;
  quota_rejections_ = 0;
}

void CachingAllocator::Trace(TraceAction action, uintptr_t addr, size_t size,
                             StreamHandle stream, uint64_t session,
                             const std::shared_ptr<const std::string>* site) {
  TraceEntry entry;
  entry.action = action;
  entry.addr = addr;
  entry.size = size;
  entry.stream = reinterpret_cast<uintptr_t>(stream);
  entry.session = session;
  if (site != nullptr) entry.site = *site;  // shared, not copied
  history_.Record(std::move(entry));
}

MemorySnapshot CachingAllocator::Snapshot() const {
  MemorySnapshot out;
  out.device = device_index_;
  uint64_t trace_end = 0;
  int64_t active_bytes = 0;
  {
    MutexLock lock(&mu_);
    SnapshotSegments(out);
    trace_end = history_.end();  // the events before it led to `segments`
    active_bytes = stats_.active_bytes[kAllPools].current;
  }
  // Lock dropped: copying 10^5 events must not stall the executors.
  out.trace = history_.EventsBefore(trace_end);
  if (!out.trace.empty()) {
    TraceEntry closing;
    closing.action = TraceAction::kSnapshot;
    closing.size = static_cast<size_t>(active_bytes);
    closing.time_us = absl::GetCurrentTimeNanos() / 1000;
    out.trace.push_back(std::move(closing));
  }
  return out;
}

void CachingAllocator::SnapshotSegments(MemorySnapshot& out) const {
  out.segments.reserve(segments_.size());
  for (const auto& [addr, head] : segments_) {
    SegmentSnapshot seg;
    seg.device = device_index_;
    seg.device_name = device_name_;
    seg.address = addr;
    seg.stream = reinterpret_cast<uintptr_t>(head->stream);
    seg.is_small = head->pool->is_small;
    for (const Block* b = head; b != nullptr; b = b->next) {
      BlockSnapshot bs;
      bs.address = reinterpret_cast<uintptr_t>(b->ptr);
      bs.size = b->size;
      seg.total_size += b->size;
      if (b->allocated || b->pending_free) {
        bs.state = b->allocated ? BlockState::kActiveAllocated
                                : BlockState::kActivePendingFree;
        bs.requested_size = b->requested;
        bs.owner_session = b->session;
        seg.active_size += b->size;
        seg.requested_size += b->requested;
        if (b->allocated) seg.allocated_size += b->size;
      }
      seg.blocks.push_back(bs);
    }
    out.segments.push_back(std::move(seg));
  }
}

absl::Status CachingAllocator::OutOfMemoryError(
    size_t bytes, size_t segment_size, const AllocContext& ctx,
    const absl::Status& backend_status) const {
  const int64_t capacity = static_cast<int64_t>(backend_->Capacity());
  const int64_t reserved = stats_.reserved_bytes[kAllPools].current;
  const int64_t allocated = stats_.allocated_bytes[kAllPools].current;
  std::string quota;
  if (auto q = quotas_.find(AccountOf(ctx.session)); q != quotas_.end()) {
    quota = absl::StrCat(" of its ", FormatBytes(q->second), " quota");
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "out of memory on ", device_name_, ": tried to allocate ",
      FormatBytes(static_cast<int64_t>(bytes)), " (a new ",
      FormatBytes(static_cast<int64_t>(segment_size)),
      " segment); the device has a total capacity of ", FormatBytes(capacity),
      ", of which ", FormatBytes(capacity - reserved),
      " is not reserved by this allocator; ", FormatBytes(allocated),
      " is allocated by tensors and ", FormatBytes(reserved - allocated),
      " is reserved but unallocated; session ", ctx.session, " holds ",
      FormatBytes(SessionBytesLocked(ctx.session)), quota,
      ". Free tensors you no longer need; if reserved but unallocated memory "
      "is large, the cache is fragmented (device said: ",
      backend_status.message(), ")."));
}

}  // namespace tensord

#include "server/daemon_counters.h"

#include <algorithm>

namespace tensord {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

int TransferIndex(TransferPath path, TransferDirection direction) {
  return static_cast<int>(path) *
             static_cast<int>(TransferDirection::kNumDirections) +
         static_cast<int>(direction);
}

}  // namespace

AtomicHistogram::AtomicHistogram(std::vector<uint64_t> bounds)
    : bounds_(std::move(bounds)),
      counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void AtomicHistogram::Observe(uint64_t value, uint64_t weight) {
  const size_t bucket =
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  counts_[bucket].fetch_add(weight, kRelaxed);
  sum_.fetch_add(value * weight, kRelaxed);
  count_.fetch_add(weight, kRelaxed);
}

AtomicHistogram::Snapshot AtomicHistogram::Read() const {
  Snapshot out;
  out.bounds = bounds_;
  out.counts.resize(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    out.counts[i] = counts_[i].load(kRelaxed);
  }
  out.sum = sum_.load(kRelaxed);
  // The buckets' total rather than count_: read apart from them, count_
  // could disagree with the buckets, which Prometheus requires to match.
  for (uint64_t c : out.counts) out.count += c;
  return out;
}

const char* TransferPathName(TransferPath path) {
  switch (path) {
    case TransferPath::kStream:
      return "stream";
    case TransferPath::kShm:
      return "shm";
    case TransferPath::kCma:
      return "cma";
    case TransferPath::kBulk:
      return "bulk";
    default:
      return "unknown";
  }
}

const char* TransferDirectionName(TransferDirection direction) {
  return direction == TransferDirection::kUpload ? "upload" : "download";
}

const char* AuthFailureName(AuthFailure reason) {
  return reason == AuthFailure::kUnknownToken ? "unknown_token" : "not_admin";
}

const std::vector<uint64_t>& DaemonCounters::LatencyBoundsUs() {
  static const auto* bounds = new std::vector<uint64_t>{
      10,    25,    50,    100,    250,    500,    1000,    2500,    5000,
      10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 10000000};
  return *bounds;
}

const std::vector<uint64_t>& DaemonCounters::QueueDepthBounds() {
  static const auto* bounds =
      new std::vector<uint64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256};
  return *bounds;
}

DaemonCounters::DaemonCounters()
    : latency_us_(LatencyBoundsUs()), queue_depth_(QueueDepthBounds()) {}

UserCounters* DaemonCounters::ForUser(absl::string_view user) {
  MutexLock lock(&mu_);
  auto [it, inserted] = users_.try_emplace(user);
  if (inserted) it->second = std::make_unique<UserCounters>();
  return it->second.get();
}

std::vector<std::pair<std::string, const UserCounters*>> DaemonCounters::Users()
    const {
  std::vector<std::pair<std::string, const UserCounters*>> out;
  MutexLock lock(&mu_);
  for (const auto& [name, counters] : users_) {
    out.emplace_back(name, counters.get());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void DaemonCounters::BatchDone(UserCounters* user, uint64_t ops,
                               uint64_t commands, uint64_t latency_us) {
  if (user != nullptr) {
    if (ops != 0) user->ops.fetch_add(ops, kRelaxed);
    user->commands.fetch_add(commands, kRelaxed);
    user->batches.fetch_add(1, kRelaxed);
  }
  if (commands != 0) latency_us_.Observe(latency_us, commands);
}

void DaemonCounters::CountError(absl::StatusCode code) {
  const int index = static_cast<int>(code);
  if (index >= 0 && index < kNumCodes) errors_[index].fetch_add(1, kRelaxed);
}

void DaemonCounters::CountTransfer(TransferPath path,
                                   TransferDirection direction,
                                   uint64_t bytes) {
  transfer_bytes_[TransferIndex(path, direction)].fetch_add(bytes, kRelaxed);
}

void DaemonCounters::CountAuthFailure(AuthFailure reason, UserCounters* user) {
  auth_failures_[static_cast<int>(reason)].fetch_add(1, kRelaxed);
  if (user != nullptr) user->auth_failures.fetch_add(1, kRelaxed);
}

uint64_t DaemonCounters::errors(absl::StatusCode code) const {
  const int index = static_cast<int>(code);
  return index >= 0 && index < kNumCodes ? errors_[index].load(kRelaxed) : 0;
}

uint64_t DaemonCounters::transfer_bytes(TransferPath path,
                                        TransferDirection direction) const {
  return transfer_bytes_[TransferIndex(path, direction)].load(kRelaxed);
}

uint64_t DaemonCounters::auth_failures(AuthFailure reason) const {
  return auth_failures_[static_cast<int>(reason)].load(kRelaxed);
}

}  // namespace tensord

#include "server/metrics_collector.h"

#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_type.h"
#include "server/user_usage.h"
#include "server/version.h"

namespace tensord {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

// Appends families and their samples; one Family call per metric name.
// Families stay where they are (a deque), so callers keep references to
// several while they add samples.
class Families {
 public:
  MetricFamily& Family(std::string name, std::string help, MetricType type) {
    MetricFamily& f = out_.emplace_back();
    f.name = std::move(name);
    f.help = std::move(help);
    f.type = type;
    return f;
  }
  static void Gauge(MetricFamily& f, Labels labels, double value) {
    ClientMetric& m = f.metric.emplace_back();
    m.label = std::move(labels);
    m.gauge.value = value;
  }
  static void Counter(MetricFamily& f, Labels labels, double value) {
    ClientMetric& m = f.metric.emplace_back();
    m.label = std::move(labels);
    m.counter.value = value;
  }
  // `scale`: the histogram's unit in the exported one (1e-6: us -> s).
  static void Histogram(MetricFamily& f, const AtomicHistogram::Snapshot& h,
                        double scale) {
    ClientMetric& m = f.metric.emplace_back();
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.counts.size(); ++i) {
      cumulative += h.counts[i];
      const double bound = i < h.bounds.size()
                               ? h.bounds[i] * scale
                               : std::numeric_limits<double>::infinity();
      m.histogram.bucket.push_back({cumulative, bound});
    }
    m.histogram.sample_count = h.count;
    m.histogram.sample_sum = h.sum * scale;
  }
  std::vector<MetricFamily> Take() {
    return {std::make_move_iterator(out_.begin()),
            std::make_move_iterator(out_.end())};
  }

 private:
  std::deque<MetricFamily> out_;
};

void AddDeviceMemory(DeviceRegistry& devices, Families& out) {
  auto& allocated = out.Family(
      "tensord_device_memory_allocated_bytes",
      "Bytes of the device's caching allocator handed to tensors (pool "
      "\"device\") or to transfers (pool \"pinned_staging\": host memory "
      "that uploads and downloads of the device stage through).",
      MetricType::Gauge);
  auto& reserved = out.Family(
      "tensord_device_memory_reserved_bytes",
      "Bytes the caching allocator obtained from the device (or pinned host "
      "memory) and holds: allocated plus its cache.",
      MetricType::Gauge);
  auto& cached = out.Family(
      "tensord_device_memory_cached_free_bytes",
      "Reserved bytes not allocated: the allocator's cache, reusable at once "
      "(tensorctl empty-cache returns them).",
      MetricType::Gauge);
  auto& free = out.Family(
      "tensord_device_memory_free_bytes",
      "Device capacity not reserved by the allocator: what it can still "
      "obtain (capacity - reserved).",
      MetricType::Gauge);
  auto& capacity =
      out.Family("tensord_device_memory_capacity_bytes",
                 "The device's memory capacity.", MetricType::Gauge);
  auto& ooms = out.Family("tensord_device_ooms_total",
                          "Allocations that failed for lack of device memory.",
                          MetricType::Counter);
  auto& rejections =
      out.Family("tensord_device_quota_rejections_total",
                 "Allocations refused because the user's quota was full.",
                 MetricType::Counter);
  for (const auto& d : devices.devices()) {
    const std::string& name = d->name();
    auto add_pool = [&](const char* pool, CachingAllocator& allocator) {
      const MemoryStats stats = allocator.GetStats();
      const int64_t a = stats.device.allocated_bytes[kAllPools].current;
      const int64_t r = stats.device.reserved_bytes[kAllPools].current;
      Labels labels = {{"device", name}, {"pool", pool}};
      Families::Gauge(allocated, labels, a);
      Families::Gauge(reserved, labels, r);
      Families::Gauge(cached, labels, r - a);
      return stats;
    };
    const MemoryStats stats = add_pool("device", *d->allocator());
    if (CachingAllocator* staging = d->staging_allocator()) {
      add_pool("pinned_staging", *staging);
    }
    const int64_t r = stats.device.reserved_bytes[kAllPools].current;
    if (stats.capacity > 0) {
      Families::Gauge(capacity, {{"device", name}}, stats.capacity);
      Families::Gauge(free, {{"device", name}},
                      std::max<int64_t>(0, stats.capacity - r));
    }
    Families::Counter(ooms, {{"device", name}}, stats.device.num_ooms);
    Families::Counter(rejections, {{"device", name}}, stats.quota_rejections);
  }
}

void AddSessions(const std::vector<v1::SessionInfo>& sessions, Families& out) {
  auto& by_state =
      out.Family("tensord_sessions", "Sessions the daemon holds, by state.",
                 MetricType::Gauge);
  auto& memory = out.Family(
      "tensord_session_memory_bytes",
      "Memory a session holds, by kind: \"tensors\" (its tensors on "
      "`device`), \"shared_buffers\" (host buffers it shares with its "
      "client) and \"shm_region\" (its transfer region); the host kinds are "
      "charged to the user's quota on device cpu.",
      MetricType::Gauge);
  auto& ops = out.Family("tensord_session_ops_total",
                         "Ops the session has run.", MetricType::Counter);
  auto& depth = out.Family("tensord_session_queue_depth",
                           "Batches queued for the session's executor now.",
                           MetricType::Gauge);
  auto& handles = out.Family("tensord_session_live_handles",
                             "Handles the session holds.", MetricType::Gauge);
  std::map<std::string, int> states = {
      {"active", 0}, {"detached", 0}, {"closing", 0}, {"closed", 0}};
  for (const v1::SessionInfo& s : sessions) {
    ++states[s.state()];
    const Labels who = {{"session", s.session_id()}, {"user", s.user()}};
    auto add_memory = [&](const std::string& device, const char* kind,
                          double bytes) {
      Labels labels = who;
      labels.push_back({"device", device});
      labels.push_back({"kind", kind});
      Families::Gauge(memory, std::move(labels), bytes);
    };
    for (const auto& [device, bytes] : s.memory_bytes()) {
      add_memory(device, "tensors", bytes);
    }
    add_memory("cpu", "shared_buffers", s.shared_buffer_bytes());
    add_memory("cpu", "shm_region", s.shm_region_bytes());
    Families::Counter(ops, who, s.ops_run());
    Families::Gauge(depth, who, s.queue_depth());
    Families::Gauge(handles, who, s.live_handles());
  }
  for (const auto& [state, n] : states) {
    Families::Gauge(by_state, {{"state", state}}, n);
  }
}

void AddUsers(const std::vector<v1::UserInfo>& users, Families& out) {
  auto& sessions =
      out.Family("tensord_user_sessions",
                 "Sessions the user holds (any state).", MetricType::Gauge);
  auto& memory = out.Family(
      "tensord_user_memory_bytes",
      "Memory charged to the user's quota on `device`: its sessions' "
      "tensors there, and on cpu their shared buffers and regions too.",
      MetricType::Gauge);
  auto& quota = out.Family(
      "tensord_user_quota_bytes",
      "The user's quota per device (tokens file quota=); absent: none.",
      MetricType::Gauge);
  auto& ops = out.Family("tensord_user_ops_total",
                         "Ops run by the user's sessions, ended ones too.",
                         MetricType::Counter);
  auto& commands =
      out.Family("tensord_user_commands_total",
                 "Commands applied for the user's sessions, ended ones too.",
                 MetricType::Counter);
  auto& denied = out.Family(
      "tensord_user_auth_failures_total",
      "Admin calls made with the user's token, refused (not an admin).",
      MetricType::Counter);
  for (const v1::UserInfo& u : users) {
    const Labels who = {{"user", u.user()}};
    Families::Gauge(sessions, who, u.sessions());
    for (const auto& [device, bytes] : u.memory_bytes()) {
      Families::Gauge(memory, {{"user", u.user()}, {"device", device}}, bytes);
    }
    if (u.quota_bytes() > 0) Families::Gauge(quota, who, u.quota_bytes());
    Families::Counter(ops, who, u.ops());
    Families::Counter(commands, who, u.commands());
    Families::Counter(denied, who, u.auth_failures());
  }
}

void AddDaemonCounters(const DaemonCounters& counters, Families& out) {
  uint64_t ops = 0, commands = 0;
  for (const auto& [name, c] : counters.Users()) {
    ops += c->ops.load(std::memory_order_relaxed);
    commands += c->commands.load(std::memory_order_relaxed);
  }
  Families::Counter(out.Family("tensord_ops_total",
                               "Ops run by every session (Call, packed "
                               "entries, backward).",
                               MetricType::Counter),
                    {}, ops);
  Families::Counter(
      out.Family("tensord_commands_total",
                 "Commands applied for every session.", MetricType::Counter),
      {}, commands);
  Families::Histogram(
      out.Family("tensord_command_latency_seconds",
                 "Per command: from its batch's arrival at the daemon to the "
                 "batch's acknowledgement (queueing and running).",
                 MetricType::Histogram),
      counters.latency(), 1e-6);
  Families::Histogram(
      out.Family("tensord_queue_depth_batches",
                 "A session's queue length when a batch joined it (batches "
                 "run inline are not queued).",
                 MetricType::Histogram),
      counters.queue_depth(), 1);
  auto& bytes = out.Family(
      "tensord_transfer_bytes_total",
      "Tensor bytes moved between clients and the daemon, by path and "
      "direction (docs/protocol.md).",
      MetricType::Counter);
  for (int p = 0; p < static_cast<int>(TransferPath::kNumPaths); ++p) {
    for (int d = 0; d < static_cast<int>(TransferDirection::kNumDirections);
         ++d) {
      const auto path = static_cast<TransferPath>(p);
      const auto direction = static_cast<TransferDirection>(d);
      Families::Counter(bytes,
                        {{"path", TransferPathName(path)},
                         {"direction", TransferDirectionName(direction)}},
                        counters.transfer_bytes(path, direction));
    }
  }
  auto& errors = out.Family(
      "tensord_errors_total",
      "Commands that failed, by status code (one whose input carried an "
      "earlier error counts too).",
      MetricType::Counter);
  for (int code = 1; code < DaemonCounters::kNumCodes; ++code) {
    const auto c = static_cast<absl::StatusCode>(code);
    Families::Counter(errors, {{"code", absl::StatusCodeToString(c)}},
                      counters.errors(c));
  }
  auto& auth = out.Family(
      "tensord_auth_failures_total",
      "Refused authentications: a token no user has (Hello or Admin), or a "
      "user's token on an Admin call without admin rights.",
      MetricType::Counter);
  for (int r = 0; r < static_cast<int>(AuthFailure::kNumReasons); ++r) {
    const auto reason = static_cast<AuthFailure>(r);
    Families::Counter(auth, {{"reason", AuthFailureName(reason)}},
                      counters.auth_failures(reason));
  }
}

void AddGpus(const Nvml& nvml, Families& out) {
  auto& utilization = out.Family(
      "tensord_gpu_utilization_ratio",
      "Fraction of the last sample period a kernel ran on the GPU (NVML).",
      MetricType::Gauge);
  auto& used = out.Family("tensord_gpu_memory_used_bytes",
                          "GPU memory in use by every process (NVML).",
                          MetricType::Gauge);
  auto& total = out.Family("tensord_gpu_memory_total_bytes",
                           "GPU memory (NVML).", MetricType::Gauge);
  auto& temperature =
      out.Family("tensord_gpu_temperature_celsius",
                 "GPU die temperature (NVML).", MetricType::Gauge);
  for (const GpuReading& g : nvml.Read()) {
    const Labels labels = {{"gpu", std::to_string(g.index)}, {"uuid", g.uuid}};
    if (g.utilization) Families::Gauge(utilization, labels, *g.utilization);
    if (g.memory_used_bytes)
      Families::Gauge(used, labels, *g.memory_used_bytes);
    if (g.memory_total_bytes) {
      Families::Gauge(total, labels, *g.memory_total_bytes);
    }
    if (g.temperature_celsius) {
      Families::Gauge(temperature, labels, *g.temperature_celsius);
    }
  }
}

}  // namespace

MetricsCollector::MetricsCollector(SessionManager* sessions,
                                   std::unique_ptr<Nvml> nvml)
    : sessions_(sessions), nvml_(std::move(nvml)) {}

std::vector<MetricFamily> MetricsCollector::Collect() const {
  Families out;
  Families::Gauge(
      out.Family("tensord_info", "Always 1; labels: the daemon's version.",
                 MetricType::Gauge),
      {{"version", kServerVersion}}, 1);
  Families::Gauge(
      out.Family("tensord_uptime_seconds", "Seconds since the daemon started.",
                 MetricType::Gauge),
      {}, absl::ToDoubleSeconds(absl::Now() - started_));
  AddDeviceMemory(*sessions_->devices(), out);
  const std::vector<v1::SessionInfo> sessions = sessions_->List();
  AddSessions(sessions, out);
  AddUsers(SumUsers(sessions, sessions_->counters(), *sessions_->auth()), out);
  AddDaemonCounters(sessions_->counters(), out);
  if (nvml_ != nullptr) AddGpus(*nvml_, out);
  return out.Take();
}

}  // namespace tensord

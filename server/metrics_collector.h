// The daemon's Prometheus metrics, built at scrape time (docs: README.md
// "Operating a shared box"; names, units and labels there and in
// tools/grafana/tensord.json).
//
// Gauges are read when Prometheus scrapes, from what the daemon keeps
// anyway: the allocators' stats, the sessions' Info, the tokens file's
// quotas, NVML. Counters come from DaemonCounters (Note [Daemon counters]),
// which the hot paths bump with relaxed atomics. So a scrape costs the
// executors nothing but the locks Info and the allocators' stats take
// briefly, as `tensorctl sessions` and `memory` do.
//
// Note [Metric labels]: every label value comes from a set the daemon owns
// and bounds: device names, session ids the daemon issued (at most
// --max_sessions_per_user per user), user names from the tokens file,
// enum names (state, path, direction, code, reason, kind, pool). Nothing a
// client chose (client names, call sites, peers) becomes a label, so a
// hostile client cannot grow the series count.
//
// Thread-safe: Collect may run on several exporter threads at once.
#ifndef TENSORD_SERVER_METRICS_COLLECTOR_H_
#define TENSORD_SERVER_METRICS_COLLECTOR_H_

#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "server/nvml.h"
#include "server/session_manager.h"

namespace tensord {

class MetricsCollector : public prometheus::Collectable {
 public:
  // `sessions` outlives this; `nvml` may be null (no GPU metrics).
  MetricsCollector(SessionManager* sessions, std::unique_ptr<Nvml> nvml);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  SessionManager* const sessions_;
  const std::unique_ptr<Nvml> nvml_;
  const absl::Time started_ = absl::Now();
};

}  // namespace tensord

#endif  // TENSORD_SERVER_METRICS_COLLECTOR_H_

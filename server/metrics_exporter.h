// Serves the daemon's metrics over HTTP for Prometheus to scrape
// (tensord --metrics_listen; server/metrics_collector.h says what is in
// them): GET /metrics answers prometheus-cpp's text exposition format.
//
// Note [Metrics HTTP]: one thread of its own accepts and answers scrapes one
// at a time (each request head within 2 s, at most 8 KiB; each answer
// within 5 s), so a scrape never runs on a session's executor or a gRPC
// thread, and a silent connection delays the next scrape by 2 s at most.
// Not prometheus-cpp's Exposer: Debian's civetweb 1.15 under it starts its
// threads with fixed 100 KiB stacks, less than the static TLS of libraries
// the daemon links (OpenBLAS 60 KiB, cuBLASLt 92 KiB), so pthread_create
// fails with EINVAL, and on a CPU-only build what remains is a 40 KiB stack.
//
// Note [Metrics address]: the metrics name every user and session and their
// memory, with no authentication, so the exporter listens on loopback only
// (127.0.0.0/8, ::1, localhost) unless the operator also passes
// --metrics_allow_remote: a scraper on another host then reaches it, and
// whoever else reaches that address does too (firewall it). Off unless
// --metrics_listen is given.
#ifndef TENSORD_SERVER_METRICS_EXPORTER_H_
#define TENSORD_SERVER_METRICS_EXPORTER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prometheus/collectable.h"

namespace tensord {

// OK if `address` (HOST:PORT) may serve metrics: a loopback host, or any
// host with `allow_remote`. INVALID_ARGUMENT says which flag to pass.
absl::Status CheckMetricsAddress(absl::string_view address, bool allow_remote);

class MetricsExporter {
 public:
  // Listens on `address` (port 0 picks a free one) and serves `collector`
  // at /metrics. INVALID_ARGUMENT for a refused address (above),
  // UNAVAILABLE if it cannot listen.
  static absl::StatusOr<std::unique_ptr<MetricsExporter>> Start(
      const std::string& address, bool allow_remote,
      std::shared_ptr<const prometheus::Collectable> collector);
  // Stops serving: a scrape in progress finishes first.
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  int port() const { return port_; }

 private:
  MetricsExporter(int fd, int wake_fd, int port,
                  std::shared_ptr<const prometheus::Collectable> collector);
  void ServeLoop();
  void Answer(int conn) const;

  const int fd_;
  const int wake_fd_;  // an eventfd: the destructor's stop signal
  const int port_;
  const std::shared_ptr<const prometheus::Collectable> collector_;
  std::thread thread_;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_METRICS_EXPORTER_H_

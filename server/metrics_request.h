// The request head of a metrics scrape (Note [Metrics HTTP],
// server/metrics_exporter.h): what the exporter does with the bytes read so
// far. Anyone who reaches the metrics address may send them, so this reads
// at most kMaxRequestHeadBytes and looks only at the request line. Pure:
// fuzzed by tests/fuzz/metrics_head_fuzzer.cc.
#ifndef TENSORD_SERVER_METRICS_REQUEST_H_
#define TENSORD_SERVER_METRICS_REQUEST_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace tensord {

inline constexpr size_t kMaxRequestHeadBytes = 8 << 10;

enum class RequestHead {
  kIncomplete,  // no blank line yet: read more
  kTooLong,     // kMaxRequestHeadBytes without a blank line: close
  kMetrics,     // GET /metrics (with or without a query): the metrics
  kOther,       // any other complete head: 404
};

RequestHead ClassifyRequestHead(absl::string_view head);

}  // namespace tensord

#endif  // TENSORD_SERVER_METRICS_REQUEST_H_

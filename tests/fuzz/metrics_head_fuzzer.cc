// libFuzzer target: arbitrary bytes as the request head a scraper (or
// anyone who reaches --metrics_listen) sends the metrics exporter
// (server/metrics_request.h), whole and as the exporter reads it, in 1 KiB
// pieces. Oracles: a head is read to its blank line or to the size limit,
// never further; only "GET /metrics" gets the metrics; reading in pieces
// stops where the whole says; nothing crashes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "server/metrics_request.h"

using tensord::ClassifyRequestHead;
using tensord::RequestHead;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  const RequestHead whole = ClassifyRequestHead(bytes);
  const bool complete = absl::StrContains(bytes, "\r\n\r\n");
  if (whole == RequestHead::kMetrics &&
      !absl::StartsWith(bytes, "GET /metrics")) {
    std::abort();
  }
  if ((whole == RequestHead::kIncomplete || whole == RequestHead::kTooLong) ==
      complete) {
    std::abort();
  }
  if (whole == RequestHead::kIncomplete &&
      size >= tensord::kMaxRequestHeadBytes) {
    std::abort();
  }
  // As the exporter reads: 1 KiB at a time until a verdict.
  size_t read = 0;
  RequestHead verdict = RequestHead::kIncomplete;
  while (verdict == RequestHead::kIncomplete && read < size) {
    read = std::min(size, read + 1024);
    verdict = ClassifyRequestHead(bytes.substr(0, read));
  }
  if (read > tensord::kMaxRequestHeadBytes + 1024) std::abort();
  if (verdict == RequestHead::kMetrics && whole != RequestHead::kMetrics &&
      whole != RequestHead::kTooLong) {
    std::abort();
  }
  return 0;
}

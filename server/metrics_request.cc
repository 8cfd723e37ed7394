#include "server/metrics_request.h"

#include "absl/strings/match.h"

namespace tensord {

RequestHead ClassifyRequestHead(absl::string_view head) {
  if (head.find("\r\n\r\n") == absl::string_view::npos) {
    return head.size() >= kMaxRequestHeadBytes ? RequestHead::kTooLong
                                               : RequestHead::kIncomplete;
  }
  return absl::StartsWith(head, "GET /metrics ") ||
                 absl::StartsWith(head, "GET /metrics?")
             ? RequestHead::kMetrics
             : RequestHead::kOther;
}

}  // namespace tensord

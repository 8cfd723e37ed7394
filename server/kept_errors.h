// Note [Kept errors]: the status a failure leaves in its output handles
// (Note [Poisoned handles]) lives as long as any of them. Each distinct
// failure keeps its own (up to kMaxErrorMessageBytes of message and
// kMaxSiteBytes of site), so a session holding 2^20 handles each poisoned by
// a failure of its own once made the daemon keep ~3 GiB. Two bounds:
// - a budget of full texts per session (kMaxSessionErrorTextBytes): past
//   it, a new failure keeps the short form (code, op, the first
//   kShortErrorBytes of message and site, and a note saying the text was
//   shortened), which still names the op and the reason's start;
// - every kept status, full or short, counts in the session's metadata
//   charge (Note [Metadata charge]) at its serialised size plus the
//   message's and the shared_ptr's overhead, so what is past the free
//   allowance is charged to the user's quota.
// Both are given back when the status's last handle goes.
//
// Thread-safe: a status may be freed on any thread.
#ifndef TENSORD_SERVER_KEPT_ERRORS_H_
#define TENSORD_SERVER_KEPT_ERRORS_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "proto/tensord.pb.h"
#include "server/metadata_charge.h"

namespace tensord {

inline constexpr size_t kMaxSessionErrorTextBytes = 1 << 20;

class KeptErrors {
 public:
  // Counts kept statuses in `charge` (null: counts only the budget).
  explicit KeptErrors(std::shared_ptr<MetadataCharge> charge,
                      size_t full_text_budget = kMaxSessionErrorTextBytes);

  // The status to keep for a failure of `op` at `site`: in full while the
  // session's full texts fit the budget, else short.
  std::shared_ptr<const v1::Status> Keep(const absl::Status& status,
                                         const std::string& op,
                                         const std::string& site);
  std::shared_ptr<const v1::Status> Keep(v1::Status status);

  // Bytes of the statuses kept in full now.
  size_t full_text_bytes() const {
    return state_->full_bytes.load(std::memory_order_relaxed);
  }

 private:
  struct State {
    std::shared_ptr<MetadataCharge> charge;
    std::atomic<size_t> full_bytes{0};
  };
  const size_t budget_;
  std::shared_ptr<State> state_;  // shared with the kept statuses' deleters
};

}  // namespace tensord

#endif  // TENSORD_SERVER_KEPT_ERRORS_H_

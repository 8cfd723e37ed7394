#include "server/kept_errors.h"

#include "absl/strings/str_cat.h"
#include "server/proto_convert.h"
#include "server/wire_limits.h"

namespace tensord {
namespace {

// What a kept status costs besides its serialised bytes: the message object
// and the control block of its shared_ptr, its strings' heap headers.
constexpr size_t kStatusOverheadBytes = sizeof(v1::Status) + 64;

}  // namespace

KeptErrors::KeptErrors(std::shared_ptr<MetadataCharge> charge,
                       size_t full_text_budget)
    : budget_(full_text_budget), state_(std::make_shared<State>()) {
  state_->charge = std::move(charge);
}

std::shared_ptr<const v1::Status> KeptErrors::Keep(const absl::Status& status,
                                                   const std::string& op,
                                                   const std::string& site) {
  return Keep(StatusToProto(status, op, site));
}

std::shared_ptr<const v1::Status> KeptErrors::Keep(v1::Status status) {
  size_t bytes = status.ByteSizeLong() + kStatusOverheadBytes;
  bool full = true;
  if (state_->full_bytes.load(std::memory_order_relaxed) + bytes > budget_) {
    full = false;
    status = ShortStatus(status);
    absl::StrAppend(status.mutable_message(),
                    " [shortened: this session's poisoned handles already "
                    "keep ",
                    budget_ >> 10, " KiB of error text]");
    bytes = status.ByteSizeLong() + kStatusOverheadBytes;
  }
  if (full) state_->full_bytes.fetch_add(bytes, std::memory_order_relaxed);
  if (state_->charge != nullptr) state_->charge->Add(bytes);
  return std::shared_ptr<const v1::Status>(
      new v1::Status(std::move(status)),
      [state = state_, bytes, full](const v1::Status* kept) {
        delete kept;
        if (full) state->full_bytes.fetch_sub(bytes, std::memory_order_relaxed);
        if (state->charge != nullptr) state->charge->Remove(bytes);
      });
}

}  // namespace tensord

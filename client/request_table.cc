// A client session's requests and their answers. See
// client/request_table.h.
#include "client/request_table.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/status.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

// A wire status the daemon marked as an error but left at code 0.
absl::Status NonOk(absl::Status status, absl::string_view what) {
  if (!status.ok()) return status;
  return absl::UnknownError(absl::StrCat(what, " without a status"));
}

}  // namespace

uint64_t RequestTable::Add(Kind kind, DownloadTarget target) {
  const uint64_t id = next_id_++;
  if (kind == Kind::kSync) {
    syncs_[id];
    return id;
  }
  PendingDownload& pending = downloads_[id];
  if (target.data != nullptr) {
    pending.assembler.SetDestination(target.data, target.capacity);
  }
  return id;
}

void RequestTable::Forget(uint64_t id) {
  downloads_.erase(id);
  syncs_.erase(id);
}

absl::Status RequestTable::Apply(const v1::ServerFrame& frame,
                                 absl::Span<const absl::string_view> payload) {
  switch (frame.kind_case()) {
    case v1::ServerFrame::kData: {
      auto it = downloads_.find(frame.data().request_id());
      if (it == downloads_.end() || it->second.done) break;
      // In a slot (copied out by the downloading thread) or in place.
      const v1::Payload& where = frame.data().payload();
      if (where.has_region() || where.has_cma() || where.has_bulk()) {
        it->second.shm = true;
        it->second.shm_reply = frame.data();
        it->second.done = true;
        break;
      }
      absl::Status status =
          payload.empty()
              ? it->second.assembler.Add(frame.data())
              : it->second.assembler.AddPieces(frame.data(), payload);
      if (!status.ok()) {
        it->second.done = true;
        it->second.status = status;
      } else if (it->second.assembler.done()) {
        it->second.done = true;
      }
      break;
    }
    case v1::ServerFrame::kSharedBuffer: {
      auto it = downloads_.find(frame.shared_buffer().request_id());
      if (it == downloads_.end() || it->second.done) break;
      it->second.shared = true;
      it->second.shared_reply = frame.shared_buffer();
      it->second.done = true;
      break;
    }
    case v1::ServerFrame::kSyncDone: {
      auto it = syncs_.find(frame.sync_done().request_id());
      if (it != syncs_.end()) {
        it->second = StatusFromProto(frame.sync_done().error());
      }
      break;
    }
    case v1::ServerFrame::kError: {
      const uint64_t request_id = frame.error().request_id();
      absl::Status status =
          NonOk(StatusFromProto(frame.error().status()), "Error frame");
      if (auto it = downloads_.find(request_id);
          request_id != 0 && it != downloads_.end()) {
        it->second.done = true;
        it->second.status = status;
      } else if (auto sync = syncs_.find(request_id);
                 request_id != 0 && sync != syncs_.end()) {
        sync->second = status;
      } else if (request_id != 0 && request_id < next_id_) {
        // A replayed answer to a request already completed: ignored.
      } else {
        return status;
      }
      break;
    }
    default:
      break;  // not an answer to a request
  }
  return absl::OkStatus();
}

bool RequestTable::DownloadWaiting(uint64_t id) const {
  auto it = downloads_.find(id);
  return it != downloads_.end() && !it->second.done;
}

PendingDownload RequestTable::TakeDownload(uint64_t id) {
  PendingDownload download = std::move(downloads_[id]);
  downloads_.erase(id);
  Answered(id);
  return download;
}

std::optional<absl::Status> RequestTable::TakeSync(uint64_t id) {
  std::optional<absl::Status> result = syncs_[id];
  syncs_.erase(id);
  Answered(id);
  return result;
}

void RequestTable::Answered(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  answered_seq_ = std::max(answered_seq_, it->second);
  seqs_.erase(it);
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

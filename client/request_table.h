// The requests of a C++ client session that the daemon answers under a
// request id: Get and AllocateShared (answered by Data or SharedBuffer
// frames), Sync (SyncDone), any of them by an Error frame. For each, its
// answer as it arrives and the seq of the command that asked, so that an
// answer also tells how far the daemon has run (answered_seq; a moment's
// answer may come before the Ack of its batch).
//
// Thread safety: none. Session keeps its table under its mu_: producers add
// requests, the reader thread applies the answers, waiters take them.
#ifndef TENSORD_CLIENT_REQUEST_TABLE_H_
#define TENSORD_CLIENT_REQUEST_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "client/download.h"
#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {
namespace internal {

// Where a download's bytes go: the caller's buffer, or (null data) a fresh
// HostTensor::bytes.
struct DownloadTarget {
  char* data = nullptr;
  size_t capacity = 0;
};

// A download's answer as it arrives.
struct PendingDownload {
  DataAssembler assembler;
  bool done = false;
  absl::Status status;
  // A ranged shm Get's answer: its bytes are in the buffer it names and are
  // copied out by the downloading thread, not the reader. (Likewise an
  // answer whose bytes the daemon wrote in place or sends on the bulk
  // socket.)
  bool shm = false;
  v1::Data shm_reply;
  // An AllocateShared's answer.
  bool shared = false;
  v1::SharedBuffer shared_reply;
};

class RequestTable {
 public:
  enum class Kind { kDownload, kSync };

  // A fresh request id, its answer pending. A download's bytes go to
  // `target`.
  uint64_t Add(Kind kind, DownloadTarget target = {});
  // Request `id` went out as command `seq`; or it could not be queued and
  // is forgotten.
  void Queued(uint64_t id, uint64_t seq) { seqs_[id] = seq; }
  void Forget(uint64_t id);

  // Applies an answer frame (Data, SharedBuffer, SyncDone, Error; others
  // are ignored). `payload`: a Data frame's bytes when decoded in place
  // (client/data_frame.h), else empty (its data field holds them). Returns
  // the status of an Error frame that answers no request, pending or past
  // (a frame-level error); else OK.
  absl::Status Apply(const v1::ServerFrame& frame,
                     absl::Span<const absl::string_view> payload);

  // Whether pending download `id` has its answer.
  bool DownloadDone(uint64_t id) { return downloads_[id].done; }
  // True while download `id` is pending and unanswered.
  bool DownloadWaiting(uint64_t id) const;
  // Takes download `id`'s answer so far and forgets it; it counts as
  // answered (answered_seq).
  PendingDownload TakeDownload(uint64_t id);
  // The same for a pending sync (nullopt: not answered).
  bool SyncDone(uint64_t id) { return syncs_[id].has_value(); }
  std::optional<absl::Status> TakeSync(uint64_t id);

  // The highest seq of a request taken: the daemon ran every command up to
  // it.
  uint64_t answered_seq() const { return answered_seq_; }

 private:
  void Answered(uint64_t id);

  uint64_t next_id_ = 1;
  absl::flat_hash_map<uint64_t, uint64_t> seqs_;  // of outstanding requests
  uint64_t answered_seq_ = 0;
  absl::flat_hash_map<uint64_t, PendingDownload> downloads_;
  absl::flat_hash_map<uint64_t, std::optional<absl::Status>> syncs_;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_REQUEST_TABLE_H_

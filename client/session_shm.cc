// Same-host transfer through the daemon's shared-memory region
// (docs/protocol.md "Shared memory"; client/shm_mapping.h). See
// client/session.h for the locking order and the slot rules.
//
// Uploads: each Put chunk is copied into the next slot and sent at once, so
// the daemon copies chunk k out while this thread fills chunk k+1; a slot
// is refilled only after the Put that read it was acknowledged. Downloads:
// up to num_slots - 1 ranged Gets are in flight while this thread copies
// the answer of another one out of its slot.
#include <cstdlib>
#include <cstring>
#include <deque>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/session.h"

namespace tensord {
inline namespace client {
namespace internal {

absl::Status Session::UploadShmChunks(const char* data, uint64_t total,
                                      uint64_t handle, const v1::Put& first,
                                      const HandleMeta& meta) {
  const int slots = shm_->num_slots();
  int k = 0;
  for (const Chunk& chunk : PlanChunks(total, shm_->slot_bytes())) {
    const int slot = k++ % slots;
    const uint64_t reader = slot_seq_[slot];
    {
      MutexLock lock(&mu_);
      // Every Put was flushed when sent, so its Ack is coming (or, while a
      // resume is under way, comes after the resend).
      auto free = [this, reader]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return acked_seq_ >= reader || !stream_error_.ok() || closed_;
      };
      mu_.Await(absl::Condition(&free));
      absl::Status open = CheckOpenLocked();
      if (!open.ok()) return open;
    }
    std::memcpy(shm_->slot(slot), data + chunk.offset, chunk.size);
    v1::Command command;
    v1::Put* put = command.mutable_put();
    if (chunk.offset == 0) *put = first;
    put->set_handle(handle);
    put->set_offset(chunk.offset);
    put->set_last(chunk.last);
    v1::RegionSpan* span = put->mutable_payload()->mutable_region();
    span->set_offset(shm_->slot_offset(slot));
    span->set_size(chunk.size);
    std::vector<uint64_t> creates;
    if (chunk.offset == 0) creates.push_back(handle);
    uint64_t seq = 0;
    absl::Status status = Append(std::move(command), creates,
                                 chunk.offset == 0 ? &meta : nullptr, &seq);
    if (!status.ok()) return status;
    slot_seq_[slot] = seq;
    // The daemon copies this chunk out while we fill the next slot.
    status = Flush();
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Session::EnqueueShmGet(uint64_t handle,
                                                const std::string& site,
                                                int slot, uint64_t byte_offset,
                                                bool notify) {
  MutexLock enqueue_lock(&enqueue_mu_);
  // A Put still reading this slot runs first: the daemon keeps the order.
  absl::StatusOr<uint64_t> request_id =
      EnqueueGetLocked(handle, site, [&](v1::Get* get) {
        v1::RegionSpan* span = get->mutable_into()->mutable_region();
        span->set_offset(shm_->slot_offset(slot));
        span->set_size(shm_->slot_bytes());
        get->set_byte_offset(byte_offset);
        get->set_notify(notify);
      });
  if (notify && request_id.ok()) {
    MutexLock lock(&mu_);
    notify_request_ = *request_id;
  }
  return request_id;
}

namespace {

// Spins up to `spin` (ClientOptions::sync_spin; $TENSORD_SYNC_SPIN_US
// overrides it) while `*word` is `seen`; true when it changed.
bool SpinWhile(const std::atomic<uint32_t>* word, uint32_t seen,
               absl::Duration spin) {
  if (const char* env = std::getenv("TENSORD_SYNC_SPIN_US")) {
    int us = 0;
    if (absl::SimpleAtoi(env, &us)) spin = absl::Microseconds(us);
  }
  if (spin <= absl::ZeroDuration()) return false;
  const absl::Time until = absl::Now() + spin;
  do {
    for (int i = 0; i < 64; ++i) {
      if (word->load(std::memory_order_acquire) != seen) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  } while (absl::Now() < until);
  return false;
}

}  // namespace

PendingDownload Session::AwaitNotified(uint64_t request_id) {
  std::atomic<uint32_t>* word = shm_->mailbox_word();
  const uint32_t mine = mailbox::WordFor(request_id);
  for (;;) {
    const uint32_t seen = word->load(std::memory_order_acquire);
    if (seen == mine) {
      PendingDownload answer;
      if (!shm_->ReadAnnouncement(request_id, &answer.shm_reply)) break;
      answer.done = answer.shm = true;
      MutexLock lock(&mu_);
      // The frame the stream still brings finds no request and is dropped.
      requests_.TakeDownload(request_id);
      notify_request_ = 0;
      mailbox_answers_.fetch_add(1, std::memory_order_relaxed);
      return answer;
    }
    {
      MutexLock lock(&mu_);
      if (!requests_.DownloadWaiting(request_id) || !stream_error_.ok()) {
        break;
      }
    }
    // The reader changes the word before it completes or fails this
    // request, so either `seen` is stale (no sleep) or it wakes us.
    // Spins first (ClientOptions::sync_spin): a sleeping thread takes tens
    // of microseconds to wake, more than the rest of a round trip on a VM.
    if (!SpinWhile(word, seen, options_.sync_spin)) mailbox::Wait(word, seen);
  }
  {
    MutexLock lock(&mu_);
    notify_request_ = 0;
  }
  return AwaitDownload(request_id);
}

PendingDownload Session::AwaitDownload(uint64_t request_id) {
  MutexLock lock(&mu_);
  auto ready = [this, request_id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return requests_.DownloadDone(request_id) || !stream_error_.ok();
  };
  mu_.Await(absl::Condition(&ready));
  PendingDownload download = requests_.TakeDownload(request_id);
  if (!download.done) {
    download.done = true;
    download.status = stream_error_;
  }
  return download;
}

absl::StatusOr<HostTensor> Session::DownloadShm(uint64_t handle,
                                                const std::string& site,
                                                std::optional<uint64_t> total,
                                                DownloadTarget target) {
  MutexLock shm_lock(&shm_mu_);
  const int slots = shm_->num_slots();
  struct InFlight {
    uint64_t request_id;
    int slot;
    uint64_t offset;
    bool notify;
  };
  std::deque<InFlight> in_flight;
  uint64_t next_offset = 0;
  int k = 0;
  // Unknown size: one Get for the first slot; its answer says the total.
  // The first Get is announced in the mailbox (a round trip without the
  // transport's threads on the way back: what item() waits for).
  auto issue = [&]() -> absl::Status {
    const int slot = k++ % slots;
    const bool notify = k == 1 && shm_->has_mailbox();
    absl::StatusOr<uint64_t> request_id =
        EnqueueShmGet(handle, site, slot, next_offset, notify);
    if (!request_id.ok()) return request_id.status();
    in_flight.push_back({*request_id, slot, next_offset, notify});
    next_offset += shm_->slot_bytes();
    return absl::OkStatus();
  };
  auto fill = [&]() -> absl::Status {
    // One slot is being copied out by this thread; the others may be busy.
    while (total.has_value() && next_offset < *total &&
           static_cast<int>(in_flight.size()) < slots - 1) {
      absl::Status status = issue();
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  };
  absl::Status status = issue();
  if (status.ok()) status = fill();
  if (status.ok()) status = Flush();
  DataAssembler assembler;
  if (target.data != nullptr) {
    assembler.SetDestination(target.data, target.capacity);
  }
  while (!in_flight.empty()) {
    const InFlight want = in_flight.front();
    in_flight.pop_front();
    PendingDownload got = want.notify ? AwaitNotified(want.request_id)
                                      : AwaitDownload(want.request_id);
    if (!status.ok()) continue;  // draining the answers after an error
    if (!got.status.ok()) {
      status = got.status;
      continue;
    }
    const v1::Data& reply = got.shm_reply;
    const v1::RegionSpan& span = reply.payload().region();
    if (!got.shm || !reply.payload().has_region() ||
        reply.offset() != want.offset || span.region() != 0 ||
        span.offset() != shm_->slot_offset(want.slot) ||
        span.size() > shm_->slot_bytes()) {
      status = absl::InternalError(absl::StrCat(
          "tensord answered the shared-memory Get of handle ", handle,
          " at byte ", want.offset, " with a range it was not asked for"));
      continue;
    }
    if (!total.has_value()) {
      total = reply.total_bytes();
    } else if (reply.total_bytes() != *total) {
      status = absl::InternalError(absl::StrCat(
          "tensord says handle ", handle, " holds ", reply.total_bytes(),
          " bytes, its metadata says ", *total));
      continue;
    }
    if (!reply.last()) {
      // The daemon fills the next slots while this one is copied out.
      status = fill();
      if (status.ok()) status = Flush();
      if (!status.ok()) continue;
    }
    status = assembler.AddBytes(
        reply, absl::string_view(shm_->slot(want.slot), span.size()));
  }
  if (!status.ok()) return status;
  if (!assembler.done()) {
    return absl::InternalError(
        absl::StrCat("tensord's shared-memory answers for handle ", handle,
                     " ended before its last byte"));
  }
  return assembler.Take();
}

}  // namespace internal
}  // namespace client
}  // namespace tensord

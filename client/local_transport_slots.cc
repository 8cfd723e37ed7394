// LocalTransport's region slots and mailbox (client/local_transport.h): uploads
// and downloads through the session region's slots, and value reads answered
// in the mailbox.
#include <atomic>
#include <cstring>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/chunking.h"
#include "client/local_transport.h"
#include "proto/mailbox.h"

namespace tensord {
inline namespace client {
namespace internal {

absl::StatusOr<uint64_t> LocalTransport::UploadSlots(const char* data,
                                                     uint64_t total,
                                                     const v1::Put& first,
                                                     HandleMeta meta) {
  MutexLock lock(&mu_);
  absl::StatusOr<uint64_t> handle = host_->BeginUpload(&meta);
  if (!handle.ok()) return handle.status();
  const int slots = shm_->num_slots();
  int k = 0;
  absl::Status status;
  for (const Chunk& chunk : PlanChunks(total, shm_->slot_bytes())) {
    const int slot = k++ % slots;
    // Every Put was flushed when sent, so its Ack is coming (or, while a
    // resume is under way, comes after the resend).
    status = host_->AwaitAck(slot_seq_[slot]);
    if (!status.ok()) break;
    std::memcpy(shm_->slot(slot), data + chunk.offset, chunk.size);
    absl::StatusOr<uint64_t> seq =
        host_->AppendPut(*handle, first, meta, chunk.offset, chunk.last, 0,
                         [&](v1::Payload* payload) {
                           v1::RegionSpan* span = payload->mutable_region();
                           span->set_offset(shm_->slot_offset(slot));
                           span->set_size(chunk.size);
                         });
    status = seq.status();
    if (!status.ok()) break;
    slot_seq_[slot] = *seq;
    // The daemon copies this chunk out while we fill the next slot.
    status = host_->Flush();
    if (!status.ok()) break;
  }
  return host_->EndUpload(*handle, status);
}

namespace {

// Spins up to `spin` while `*word` is `seen`; true when it changed.
bool SpinWhile(const std::atomic<uint32_t>* word, uint32_t seen,
               absl::Duration spin) {
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

PendingDownload LocalTransport::AwaitNotified(uint64_t request_id) {
  std::atomic<uint32_t>* word = shm_->mailbox_word();
  const uint32_t mine = mailbox::WordFor(request_id);
  for (;;) {
    const uint32_t seen = word->load(std::memory_order_acquire);
    if (seen == mine) {
      PendingDownload answer;
      if (!shm_->ReadAnnouncement(request_id, &answer.shm_reply)) break;
      answer.done = answer.shm = true;
      // The frame the stream still brings finds no request and is dropped.
      host_->DropAnswer(request_id);
      notify_request_.store(0);
      mailbox_answers_.fetch_add(1, std::memory_order_relaxed);
      return answer;
    }
    if (!host_->AnswerPending(request_id)) break;
    // Answered changes the word before the reader completes or fails this
    // request, so either `seen` is stale (no sleep) or it wakes us. Spins
    // first (ClientOptions::sync_spin): a sleeping thread takes tens of
    // microseconds to wake, more than the rest of a round trip on a VM.
    if (!SpinWhile(word, seen, sync_spin_)) mailbox::Wait(word, seen);
  }
  notify_request_.store(0);
  return host_->AwaitAnswer(request_id);
}

absl::StatusOr<HostTensor> LocalTransport::DownloadSlots(
    uint64_t handle, const std::string& site, std::optional<uint64_t> total,
    DownloadTarget target) {
  MutexLock lock(&mu_);
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
  // transport's threads on the way back: what item() waits for). A Put
  // still reading a slot runs first: the daemon keeps the order.
  auto issue = [&]() -> absl::Status {
    const int slot = k++ % slots;
    const bool notify = k == 1 && shm_->has_mailbox();
    absl::StatusOr<uint64_t> request_id = SendGet(
        handle, site, {},
        [&](v1::Get* get) {
          v1::RegionSpan* span = get->mutable_into()->mutable_region();
          span->set_offset(shm_->slot_offset(slot));
          span->set_size(shm_->slot_bytes());
          get->set_byte_offset(next_offset);
          get->set_notify(notify);
        },
        /*flush=*/false);
    if (!request_id.ok()) return request_id.status();
    if (notify) notify_request_.store(*request_id);
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
  if (status.ok()) status = host_->Flush();
  DataAssembler assembler;
  if (target.data != nullptr) {
    assembler.SetDestination(target.data, target.capacity);
  }
  while (!in_flight.empty()) {
    const InFlight want = in_flight.front();
    in_flight.pop_front();
    PendingDownload got = want.notify ? AwaitNotified(want.request_id)
                                      : host_->AwaitAnswer(want.request_id);
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
      if (status.ok()) status = host_->Flush();
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

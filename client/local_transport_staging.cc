// LocalTransport's staging buffer and mailbox (client/local_transport.h):
// uploads and downloads through a shared buffer of the transport's own, and
// value reads answered in the session region's mailbox.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/chunking.h"
#include "client/local_transport.h"
#include "proto/mailbox.h"

namespace tensord {
inline namespace client {
namespace internal {

bool LocalTransport::TakeStaging(uint64_t bytes) {
  const bool have = staging_.mapping != nullptr;
  if ((have && staging_bytes_ >= std::min(bytes, max_staging_)) ||
      max_staging_ == 0) {
    return have;
  }
  uint64_t size = kFirstStagingBytes;
  while (size < bytes) size *= 2;
  size = std::min(size, max_staging_);
  absl::StatusOr<SharedAllocation> made = AllocateShared(size);
  if (!made.ok()) {
    if (!absl::IsResourceExhausted(made.status())) max_staging_ = 0;
    return have;
  }
  // Released after the commands that named it: the daemon keeps the order.
  if (have) FreeShared(staging_.region);
  staging_ = *std::move(made);
  staging_bytes_ = size;
  staging_seq_ = 0;
  return true;
}

void LocalTransport::StagingSpan(uint64_t size, v1::RegionSpan* span) const {
  span->set_region(staging_.region);
  span->set_offset(staging_.mapping->data_offset());
  span->set_size(size);
}

absl::StatusOr<uint64_t> LocalTransport::UploadStaged(const char* data,
                                                      uint64_t total,
                                                      const v1::Put& first,
                                                      HandleMeta meta) {
  MutexLock lock(&mu_);
  if (!TakeStaging(total)) return UploadInline(data, total, first, meta);
  absl::StatusOr<uint64_t> handle = host_->BeginUpload(&meta);
  if (!handle.ok()) return handle.status();
  char* const bytes =
      staging_.mapping->base() + staging_.mapping->data_offset();
  absl::Status status;
  for (const Chunk& chunk : PlanChunks(total, staging_bytes_)) {
    // Every Put was flushed when sent, so its Ack is coming (or, while a
    // resume is under way, comes after the resend).
    status = host_->AwaitAck(staging_seq_);
    if (!status.ok()) break;
    std::memcpy(bytes, data + chunk.offset, chunk.size);
    v1::RegionSpan span;
    StagingSpan(chunk.size, &span);
    absl::StatusOr<uint64_t> seq = host_->AppendPut(
        *handle, first, meta, chunk.offset, chunk.last, 0,
        [&](v1::Payload* payload) { *payload->mutable_region() = span; });
    status = seq.status();
    if (!status.ok()) break;
    staging_seq_ = *seq;
    status = host_->Flush();  // sent at once: the upload need not wait
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

absl::StatusOr<HostTensor> LocalTransport::DownloadStaged(
    uint64_t handle, const std::string& site, std::optional<uint64_t> total,
    DownloadTarget target) {
  MutexLock lock(&mu_);
  if (!TakeStaging(total.value_or(kFirstStagingBytes))) {
    return DownloadInline(handle, site, target);
  }
  DataAssembler assembler;
  if (target.data != nullptr) {
    assembler.SetDestination(target.data, target.capacity);
  }
  // One Get at a time into the buffer, each copied out; the first is
  // announced in the mailbox (a round trip without the transport's threads
  // on the way back: what item() waits for). A Put still reading the buffer
  // runs first: the daemon keeps the order.
  bool notify = shm_->has_mailbox();
  uint64_t done = 0;
  for (;;) {
    v1::RegionSpan into;
    StagingSpan(staging_bytes_, &into);
    absl::StatusOr<uint64_t> request_id =
        SendGet(handle, site, {}, [&](v1::Get* get) {
          *get->mutable_into()->mutable_region() = into;
          get->set_byte_offset(done);
          get->set_notify(notify);
        });
    if (!request_id.ok()) return request_id.status();
    if (notify) notify_request_.store(*request_id);
    PendingDownload got =
        notify ? AwaitNotified(*request_id) : host_->AwaitAnswer(*request_id);
    notify = false;
    if (!got.status.ok()) return got.status;
    const v1::Data& reply = got.shm_reply;
    const v1::RegionSpan& span = reply.payload().region();
    if (!got.shm || !reply.payload().has_region() || reply.offset() != done ||
        span.region() != into.region() || span.offset() != into.offset() ||
        span.size() > into.size() || (span.size() == 0 && !reply.last())) {
      return absl::InternalError(absl::StrCat(
          "tensord answered the shared-memory Get of handle ", handle,
          " at byte ", done, " with a range it was not asked for"));
    }
    if (total.has_value() && reply.total_bytes() != *total) {
      return absl::InternalError(absl::StrCat(
          "tensord says handle ", handle, " holds ", reply.total_bytes(),
          " bytes, its metadata says ", *total));
    }
    absl::Status status = assembler.AddBytes(
        reply, absl::string_view(staging_.mapping->base() + span.offset(),
                                 span.size()));
    if (!status.ok()) return status;
    done += span.size();
    if (reply.last()) break;
    TakeStaging(reply.total_bytes() - done);  // grown for the rest, if it can
  }
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

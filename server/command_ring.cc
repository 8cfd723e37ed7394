#include "server/command_ring.h"

#include <sched.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "proto/command_ring.h"
#include "proto/mailbox.h"
#include "runtime/core/block_cache.h"

namespace tensord {

CommandRing::CommandRing(const ShmRegion* region, Hooks hooks, int spin_us)
    : words_(region->ring_control()),
      records_(region->ring_records()),
      ring_bytes_(region->ring_bytes()),
      hooks_(std::move(hooks)),
      spin_us_(spin_us),
      reader_([this] { Loop(); }) {}

CommandRing::~CommandRing() {
  Stop();
  if (std::this_thread::get_id() == reader_.get_id()) {
    reader_.detach();
  } else if (reader_.joinable()) {
    reader_.join();
  }
}

void CommandRing::Drain() {
  uint32_t running = kRunning;
  state_.compare_exchange_strong(running, kDraining);
  words_.doorbell->fetch_add(1, std::memory_order_seq_cst);
  mailbox::Wake(words_.doorbell);
}

void CommandRing::Stop() {
  state_.store(kStopping);
  words_.doorbell->fetch_add(1, std::memory_order_seq_cst);
  mailbox::Wake(words_.doorbell);
}

void CommandRing::NoteStreamBatch(uint64_t seq) {
  words_.stream_seq->store(seq, std::memory_order_seq_cst);
  WakeClient();
}

void CommandRing::WakeClient() {
  // Dekker with the client: it sets client_waiting, then re-reads the words
  // it waits on; we wrote those words (seq_cst) before this load.
  if (words_.client_waiting->load(std::memory_order_seq_cst) != 0) {
    words_.space->fetch_add(1, std::memory_order_seq_cst);
    mailbox::Wake(words_.space);
  }
}

void CommandRing::Publish(uint64_t tail) {
  words_.tail->store(tail, std::memory_order_seq_cst);
  WakeClient();
}

void CommandRing::Loop() {
  uint64_t tail = words_.tail->load(std::memory_order_acquire);
  while (WaitForRecord(tail)) {
    const uint64_t head = words_.head->load(std::memory_order_acquire);
    if (!ReadRecord(&tail, head)) return;
    hooks_.flush_acks(words_.ack_wanted->load(std::memory_order_acquire));
  }
}

bool CommandRing::WaitForRecord(uint64_t tail) {
  const absl::Time spin_until = absl::Now() + absl::Microseconds(spin_us_);
  while (true) {
    const uint32_t state = state_.load();
    if (state == kStopping) return false;
    if (words_.head->load(std::memory_order_acquire) != tail) return true;
    if (state == kDraining) {
      hooks_.drained();
      return false;
    }
    if (spin_us_ > 0 && absl::Now() < spin_until) {
      hooks_.flush_acks(words_.ack_wanted->load(std::memory_order_acquire));
      // Polite: any thread waiting for this CPU runs first (on 2 vCPUs the
      // client, gRPC and the executors need it as much as this poll does).
      sched_yield();
      continue;
    }
    // Dekker with the client, which stores head (or ack_wanted) and then
    // reads daemon_idle: what it stored before seeing 0 is read here.
    const uint32_t bell = words_.doorbell->load(std::memory_order_seq_cst);
    words_.daemon_idle->store(1, std::memory_order_seq_cst);
    const int64_t acks_due_ns =
        hooks_.flush_acks(words_.ack_wanted->load(std::memory_order_seq_cst));
    if (words_.head->load(std::memory_order_seq_cst) == tail &&
        state_.load() == state) {
      mailbox::Wait(words_.doorbell, bell, acks_due_ns);
    }
    words_.daemon_idle->store(0, std::memory_order_relaxed);
  }
}

bool CommandRing::ReadRecord(uint64_t* tail, uint64_t head) {
  const uint64_t available = head - *tail;
  const uint64_t pos = *tail & (ring_bytes_ - 1);
  const uint64_t to_end = ring_bytes_ - pos;
  auto malformed = [&](absl::string_view why) {
    hooks_.fail(absl::InvalidArgumentError(absl::StrCat(
        "command ring: the record at byte ", *tail, " (ring position ", pos,
        " of ", ring_bytes_, ") ", why, "; the session is ended")));
    return false;
  };
  if (available > ring_bytes_ || available < command_ring::kRecordHeader) {
    return malformed(absl::StrCat("is past the published head ", head));
  }
  uint32_t length = 0;
  uint32_t magic = 0;
  std::memcpy(&length, records_ + pos, sizeof(length));
  std::memcpy(&magic, records_ + pos + 4, sizeof(magic));
  if (length == command_ring::kWrapMarker) {
    if (available < to_end) return malformed("wraps past the published head");
    *tail += to_end;
    Publish(*tail);
    return true;
  }
  if (magic != command_ring::kRecordMagic) {
    return malformed(absl::StrCat("has magic ", magic, ", not ",
                                  command_ring::kRecordMagic));
  }
  const uint64_t record = command_ring::RecordBytes(length);
  if (record > to_end || record > available) {
    return malformed(absl::StrCat("says ", length,
                                  " frame bytes, more than the ring holds"));
  }
  auto arena = std::make_unique<google::protobuf::Arena>(FrameArenaOptions());
  auto* frame =
      google::protobuf::Arena::CreateMessage<v1::ClientFrame>(arena.get());
  if (!frame->ParseFromArray(records_ + pos + command_ring::kRecordHeader,
                             static_cast<int>(length))) {
    return malformed(
        "could not be parsed as a tensord.v1.ClientFrame (malformed "
        "protobuf, or a string field that is not UTF-8)");
  }
  if (!frame->has_batch()) {
    return malformed("is not a batch (a Hello goes on the stream)");
  }
  // Handed over before the tail moves: tail == head then means queued.
  const bool room = hooks_.submit(std::move(arena), frame->mutable_batch());
  frames_.fetch_add(1, std::memory_order_relaxed);
  *tail += record;
  Publish(*tail);
  if (!room) hooks_.wait_for_room();
  return true;
}

}  // namespace tensord

#include "server/session_outbox.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"
#include "runtime/ops/op_def.h"

namespace tensord {

void SessionOutbox::SetSeq(uint64_t seq) {
  MutexLock lock(&mu_);
  seq_ = seq;
  acked_ = false;
}

void SessionOutbox::Send(v1::ServerFrame frame) {
  SendOwned(std::make_shared<v1::ServerFrame>(std::move(frame)));
}

void SessionOutbox::SendOwned(std::shared_ptr<v1::ServerFrame> frame) {
  std::shared_ptr<FrameSink> sink;
  std::shared_ptr<const v1::ServerFrame> held;
  std::shared_ptr<const v1::ServerFrame> shared;
  {
    MutexLock lock(&mu_);
    frame->set_seq(acked_ ? seq_ + 1 : seq_);
    const bool is_ack = frame->has_ack();
    if (is_ack) acked_ = true;
    // ByteSizeLong also caches the sizes the serializer needs. A frame on
    // an arena (the executor's Acks) holds the arena's blocks, several
    // times its wire size: the bound counts what stays in memory.
    size_t bytes = frame->ByteSizeLong();
    if (google::protobuf::Arena* arena = frame->GetArena()) {
      bytes = std::max<size_t>(bytes, arena->SpaceAllocated());
    }
    shared = std::move(frame);
    KeepLocked(shared, bytes);
    // Note [Held acks]
    if (is_ack && sink_ && holder_ == std::this_thread::get_id()) {
      if (held_.empty()) held_since_ns_ = PhaseClockNs();
      held_.push_back(std::move(shared));
      if (held_.size() < kMaxHeldAcks) return;
      held = TakeHeldLocked();  // this one included
    } else {
      held = TakeHeldLocked();
      if (is_ack) forwarded_ack_seq_ = shared->ack().last_seq();
    }
    sink = sink_;
  }
  // Outside mu_: Send may wait for the transport (flow control).
  Forward(sink, std::move(held), std::move(shared));
}

void SessionOutbox::KeepLocked(std::shared_ptr<const v1::ServerFrame> frame,
                               size_t bytes) {
  while (!buffer_.empty() && buffered_bytes_ + bytes > max_bytes_) {
    EvictFrontLocked();
  }
  std::unique_ptr<ExternalCharge> charge;
  while (bytes <= max_bytes_ && quota_ != nullptr) {
    absl::StatusOr<std::unique_ptr<ExternalCharge>> charged =
        ExternalCharge::Make(quota_, session_, bytes);
    if (charged.ok()) {
      charge = *std::move(charged);
      break;
    }
    if (buffer_.empty()) break;
    EvictFrontLocked();  // the quota is full: older replies make room
  }
  if (bytes > max_bytes_ || (quota_ != nullptr && charge == nullptr)) {
    evicted_seq_ = std::max(evicted_seq_, frame->seq());  // not kept
    return;
  }
  buffered_bytes_ += bytes;
  buffer_.push_back(Buffered{std::move(frame), bytes, std::move(charge)});
}

void SessionOutbox::EvictFrontLocked() {
  evicted_seq_ = std::max(evicted_seq_, buffer_.front().frame->seq());
  buffered_bytes_ -= buffer_.front().bytes;
  buffer_.pop_front();
}

void SessionOutbox::Forward(const std::shared_ptr<FrameSink>& sink,
                            std::shared_ptr<const v1::ServerFrame> first,
                            std::shared_ptr<const v1::ServerFrame> second) {
  if (!sink) return;
  MutexLock forward(&forward_mu_);
  if (first) sink->SendShared(std::move(first));
  if (second) sink->SendShared(std::move(second));
}

std::shared_ptr<const v1::ServerFrame> SessionOutbox::TakeHeldLocked() {
  if (held_.empty()) return nullptr;
  std::shared_ptr<const v1::ServerFrame> merged;
  if (held_.size() == 1) {
    merged = held_.front();
  } else {
    // A new frame: the held ones stay in the replay buffer as they are.
    auto frame = std::make_shared<v1::ServerFrame>();
    frame->set_seq(held_.back()->seq());
    v1::Ack* ack = frame->mutable_ack();
    for (const auto& f : held_) {
      for (const v1::TensorMeta& m : f->ack().created()) {
        *ack->add_created() = m;
      }
      // Entries are self-delimiting (Note [Packed metas]).
      ack->mutable_packed_created()->append(f->ack().packed_created());
    }
    ack->set_last_seq(held_.back()->ack().last_seq());
    frame->ByteSizeLong();  // caches the sizes the serializer needs
    merged = std::move(frame);
  }
  forwarded_ack_seq_ = held_.back()->ack().last_seq();
  held_.clear();
  held_since_ns_ = 0;
  return merged;
}

void SessionOutbox::HoldAcksFrom(std::thread::id holder) {
  MutexLock lock(&mu_);
  holder_ = holder;
}

void SessionOutbox::FlushHeldAcks() {
  std::shared_ptr<FrameSink> sink;
  std::shared_ptr<const v1::ServerFrame> held;
  {
    MutexLock lock(&mu_);
    held = TakeHeldLocked();
    sink = sink_;
  }
  Forward(sink, std::move(held), nullptr);
}

int64_t SessionOutbox::FlushDueAcks(uint64_t ack_wanted) {
  const HeldAcks held = held_acks();
  if (held.first_seq == 0) return -1;
  const uint64_t age = PhaseClockNs() - held.since_ns;
  if (ack_wanted < held.first_seq && age < kAckDelayNs) {
    return static_cast<int64_t>(kAckDelayNs - age);
  }
  FlushHeldAcks();
  return -1;
}

SessionOutbox::HeldAcks SessionOutbox::held_acks() {
  MutexLock lock(&mu_);
  HeldAcks h;
  if (!held_.empty()) {
    h.first_seq = forwarded_ack_seq_ + 1;
    h.since_ns = held_since_ns_;
  }
  return h;
}

void SessionOutbox::End(absl::Status status) {
  std::shared_ptr<FrameSink> sink;
  std::shared_ptr<const v1::ServerFrame> held;
  {
    MutexLock lock(&mu_);
    ended_ = true;
    end_status_ = status;
    held = TakeHeldLocked();
    sink = sink_;
  }
  Forward(sink, std::move(held), nullptr);
  if (sink) {
    MutexLock forward(&forward_mu_);
    sink->End(std::move(status));
  }
}

absl::Status SessionOutbox::Attach(std::shared_ptr<FrameSink> sink,
                                   uint64_t received_seq,
                                   v1::ServerFrame welcome) {
  MutexLock forward(&forward_mu_);
  std::vector<std::shared_ptr<const v1::ServerFrame>> replay;
  absl::Status end;
  bool ended;
  {
    MutexLock lock(&mu_);
    if (received_seq < confirmed_seq_) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot resume from command ", received_seq,
                       ": the client confirmed receiving the replies up to ",
                       confirmed_seq_));
    }
    if (received_seq < evicted_seq_) {
      return absl::DataLossError(
          absl::StrCat("cannot resume: replies after command ", received_seq,
                       " were dropped while detached (more than ", max_bytes_,
                       " bytes of replies); start a new session"));
    }
    for (const Buffered& b : buffer_) {
      if (b.frame->seq() > received_seq) replay.push_back(b.frame);
    }
    held_.clear();  // replayed from the buffer instead
    sink_ = sink;
    ended = ended_;
    end = end_status_;
  }
  sink->Send(std::move(welcome));
  for (auto& f : replay) sink->SendShared(std::move(f));
  if (ended) sink->End(end);
  return absl::OkStatus();
}

void SessionOutbox::Confirm(uint64_t received_seq) {
  MutexLock lock(&mu_);
  confirmed_seq_ = std::max(confirmed_seq_, received_seq);
  while (!buffer_.empty() && buffer_.front().frame->seq() <= confirmed_seq_) {
    buffered_bytes_ -= buffer_.front().bytes;
    buffer_.pop_front();
  }
}

size_t SessionOutbox::buffered_bytes() {
  MutexLock lock(&mu_);
  return buffered_bytes_;
}

bool SessionOutbox::Detach(const FrameSink* sink) {
  MutexLock lock(&mu_);
  if (sink_.get() != sink) return false;
  sink_.reset();
  held_.clear();  // the next Attach replays them
  return true;
}

}  // namespace tensord

namespace tensord {

void SessionOutbox::DetachAny() {
  MutexLock lock(&mu_);
  sink_.reset();
  held_.clear();
}

bool SessionOutbox::AttachedTo(const FrameSink* sink) {
  MutexLock lock(&mu_);
  return sink_.get() == sink;
}

}  // namespace tensord

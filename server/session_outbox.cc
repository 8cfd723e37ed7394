#include "server/session_outbox.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"

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
  std::shared_ptr<const v1::ServerFrame> shared;
  {
    MutexLock lock(&mu_);
    frame->set_seq(acked_ ? seq_ + 1 : seq_);
    if (frame->has_ack()) acked_ = true;
    // ByteSizeLong also caches the sizes the serializer needs. A frame on
    // an arena (the executor's Acks) holds the arena's blocks, several
    // times its wire size: the bound counts what stays in memory.
    size_t bytes = frame->ByteSizeLong();
    if (google::protobuf::Arena* arena = frame->GetArena()) {
      bytes = std::max<size_t>(bytes, arena->SpaceAllocated());
    }
    buffered_bytes_ += bytes;
    shared = std::move(frame);
    buffer_.push_back(Buffered{shared, bytes});
    while (buffered_bytes_ > max_bytes_ && !buffer_.empty()) {
      evicted_seq_ = std::max(evicted_seq_, buffer_.front().frame->seq());
      buffered_bytes_ -= buffer_.front().bytes;
      buffer_.pop_front();
    }
    sink = sink_;
  }
  // Outside mu_: Send may wait for the transport (flow control).
  if (sink) {
    MutexLock forward(&forward_mu_);
    sink->SendShared(std::move(shared));
  }
}

void SessionOutbox::End(absl::Status status) {
  std::shared_ptr<FrameSink> sink;
  {
    MutexLock lock(&mu_);
    ended_ = true;
    end_status_ = status;
    sink = sink_;
  }
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
  return true;
}

}  // namespace tensord

namespace tensord {

void SessionOutbox::DetachAny() {
  MutexLock lock(&mu_);
  sink_.reset();
}

bool SessionOutbox::AttachedTo(const FrameSink* sink) {
  MutexLock lock(&mu_);
  return sink_.get() == sink;
}

}  // namespace tensord

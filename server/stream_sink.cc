#include "server/stream_sink.h"

#include <algorithm>
#include <utility>

namespace tensord {

void StreamSink::Send(v1::ServerFrame frame) {
  SendShared(std::make_shared<const v1::ServerFrame>(std::move(frame)));
}

void StreamSink::SendShared(std::shared_ptr<const v1::ServerFrame> frame) {
  {
    MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](StreamSink* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
          return s->dead_ || s->queued_bytes_ < kMaxQueuedBytes;
        },
        this));
    if (dead_ || ended_) return;
    queued_bytes_ += frame->ByteSizeLong();
    queue_.push_back(std::move(frame));
  }
  Pump();
}

void StreamSink::End(absl::Status status) {
  {
    MutexLock lock(&mu_);
    if (ended_) return;
    ended_ = true;
    end_status_ = std::move(status);
  }
  Pump();
}

void StreamSink::Pump() {
  StreamWriter* reactor = nullptr;
  bool finish = false;
  absl::Status status;
  {
    MutexLock lock(&mu_);
    if (writing_ || reactor_ == nullptr || finished_) return;
    if (!queue_.empty() && !dead_) {
      current_ = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= std::min(queued_bytes_,
                                static_cast<size_t>(current_->GetCachedSize()));
      writing_ = true;
      reactor = reactor_;
    } else if (ended_ || dead_) {
      finished_ = true;
      finish = true;
      status = dead_ && end_status_.ok() ? absl::CancelledError("peer gone")
                                         : end_status_;
      reactor = reactor_;
    }
  }
  if (reactor == nullptr) return;
  // gRPC allows one outstanding write; StartWrite/Finish are called outside
  // mu_ because the library may run reactions on this thread.
  if (finish) {
    reactor->DoFinish(status);
  } else {
    reactor->DoWrite(current_);
  }
}

void StreamSink::WriteDone(bool ok) {
  {
    MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      dead_ = true;
      queue_.clear();
      queued_bytes_ = 0;
    }
  }
  Pump();
}

void StreamSink::MarkDead() {
  {
    MutexLock lock(&mu_);
    dead_ = true;
    queue_.clear();
    queued_bytes_ = 0;
  }
  Pump();
}

void StreamSink::ResumeReading() {
  StreamWriter* reactor;
  {
    MutexLock lock(&mu_);
    reactor = reactor_;
    if (reactor == nullptr || dead_) return;
    ++resuming_;
  }
  reactor->DoRead();
  MutexLock lock(&mu_);
  --resuming_;
}

void StreamSink::Detach() {
  MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](StreamSink* s)
           ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) { return s->resuming_ == 0; },
      this));
  reactor_ = nullptr;
  dead_ = true;
  queue_.clear();
  queued_bytes_ = 0;
}

}  // namespace tensord

#include "server/session.h"

#include "spdlog/spdlog.h"

namespace tensord {

Session::Session(SessionParams params, std::shared_ptr<FrameSink> sink)
    : params_(std::move(params)),
      sink_(std::move(sink)),
      runner_(
          RunnerConfig{params_.number, params_.devices, params_.chunk_bytes},
          sink_.get()),
      executor_([this] { ExecutorLoop(); }) {}

Session::~Session() {
  Kill(absl::CancelledError("session destroyed"));
  // The last reference can be dropped by a callback the executor itself
  // triggered (FrameSink::End); it must not join itself then.
  if (std::this_thread::get_id() == executor_.get_id()) {
    executor_.detach();
  } else {
    executor_.join();
  }
}

bool Session::Submit(v1::Batch batch) {
  absl::MutexLock lock(&mu_);
  if (closing_) return true;  // late frames after Close/Kill are dropped
  queue_.push_back(std::move(batch));
  if (queue_.size() > params_.max_queued_batches) {
    paused_ = true;
    return false;
  }
  return true;
}

void Session::SetOnDrain(std::function<void()> on_drain) {
  absl::MutexLock lock(&mu_);
  on_drain_ = std::move(on_drain);
}

void Session::Close(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (closing_) return;
  closing_ = true;
  end_status_ = std::move(status);
}

void Session::Kill(absl::Status reason) {
  absl::MutexLock lock(&mu_);
  queue_.clear();
  if (!closing_) end_status_ = std::move(reason);
  closing_ = true;
}

void Session::WaitDone() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&done_));
}

void Session::ExecutorLoop() {
  while (true) {
    v1::Batch batch;
    std::function<void()> drained;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](Session* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
            return !s->queue_.empty() || s->closing_;
          },
          this));
      if (queue_.empty()) break;  // closing and drained
      batch = std::move(queue_.front());
      queue_.pop_front();
      if (paused_ && queue_.size() <= params_.max_queued_batches / 2) {
        paused_ = false;
        drained = on_drain_;
      }
    }
    if (drained) drained();  // outside the lock: the transport resumes reading
    runner_.RunBatch(batch);
  }
  runner_.ReleaseAll();
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    status = end_status_;
  }
  spdlog::info("session {} ({}) ended: {}", params_.id, params_.user,
               status.ok() ? "closed by client" : status.ToString());
  sink_->End(status);
  absl::MutexLock lock(&mu_);
  done_ = true;
}

v1::SessionInfo Session::Info() const {
  v1::SessionInfo info;
  info.set_session_id(params_.id);
  info.set_user(params_.user);
  info.set_client_name(params_.client_name);
  info.set_peer(params_.peer);
  info.set_age_seconds(absl::ToDoubleSeconds(absl::Now() - created_));
  {
    absl::MutexLock lock(&mu_);
    info.set_state(done_ ? "closed" : closing_ ? "closing" : "active");
    info.set_queue_depth(queue_.size());
  }
  info.set_live_handles(runner_.live_handles());
  info.set_ops_run(runner_.ops_run());
  for (const auto& device : params_.devices->devices()) {
    (*info.mutable_memory_bytes())[device->name()] =
        device->allocator()->SessionBytes(params_.number);
  }
  return info;
}

}  // namespace tensord
